"""What a call reports beside its output (contract 0.2): results the host turns into
Events on the object (Normal or Warning), conditions, and context values for the later
steps of a mutation chain. None of them fails the call; raise a
:class:`~syncweave_plugin.errors.PluginError` for that.

    from syncweave_plugin import report

    report.warning("NamespaceMissing", f"namespace {ns} not found; labels not copied")
    report.normal("LabelsCopied", f"copied {n} labels from namespace {ns}")
    report.condition("LabelsCopied", "True", "Copied", f"{n} labels")
    report.set_context("tenant", tenant)         # ctx.values["tenant"] in later steps

Reasons and condition types are CamelCase, as Kubernetes wants them. A context key that
an earlier step set cannot be set again (each key has one owner). Works only during a
call of a plugin that targets contract 0.2; :func:`syncweave_plugin.testing.call`
returns the report for assertions.
"""

from __future__ import annotations

import re
from typing import Any, Union

from . import _call
from .adapter import to_json
from .contract import ContractError
from .types import CallResult, Condition, Severity

_CAMEL = re.compile(r"^[A-Z][A-Za-z0-9]*$")
STATUSES = ("True", "False", "Unknown")


def _camel(value: Any, what: str, feature: str) -> str:
    if not isinstance(value, str) or not _CAMEL.match(value):
        raise ValueError(
            f"{feature}: {what} {value!r} must be CamelCase (letters and digits, starting with a capital, "
            "e.g. \"NamespaceMissing\"), as Kubernetes Events and conditions require"
        )
    return value


def _text(value: Any, what: str, feature: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{feature}: {what} must be a string, not {type(value).__name__}")
    return value


def _report(feature: str) -> Any:
    call = _call.current(feature)
    if getattr(call.plugin, "world", "") == "projector":
        raise ContractError(f"{feature}: a Projector cannot report (projection returns only the CRD)")
    return call


def _result(severity: Severity, feature: str, reason: str, message: str) -> None:
    call = _report(feature)
    call.report.results.append(
        CallResult(severity, _camel(reason, "reason", feature), _text(message, "message", feature))
    )


def normal(reason: str, message: str) -> None:
    """Something worth telling the consumer: a Normal Event on the object."""
    _result(Severity.NORMAL, "report.normal", reason, message)


def warning(reason: str, message: str) -> None:
    """Something is wrong or missing, but the output is usable: a Warning Event."""
    _result(Severity.WARNING, "report.warning", reason, message)


def condition(type: str, status: Union[str, bool], reason: str, message: str = "") -> None:  # noqa: A002
    """A condition on the object the call handled. ``status`` is ``"True"``,
    ``"False"``, ``"Unknown"`` (or a bool). Reporting the same type again in one call
    replaces it."""
    feature = "report.condition"
    call = _report(feature)
    if isinstance(status, bool):
        status = "True" if status else "False"
    if status not in STATUSES:
        raise ValueError(f"{feature}: status {status!r} must be one of \"True\", \"False\", \"Unknown\"")
    cond = Condition(_camel(type, "type", feature), status, _camel(reason, "reason", feature), _text(message, "message", feature))
    conditions = call.report.conditions
    for i, existing in enumerate(conditions):
        if existing.type == cond.type:
            conditions[i] = cond
            return
    conditions.append(cond)


def set_context(key: str, value: Any) -> None:
    """Passes ``value`` (any JSON value) to the later steps of the mutation chain, which
    read it as ``ctx.values[key]``. Setting the same key again in one call replaces it;
    a key an earlier step set is an error."""
    feature = "report.set_context"
    call = _report(feature)
    if not isinstance(key, str) or key == "":
        raise ValueError(f"{feature}: key must be a non-empty string, not {key!r}")
    if key in call.values:
        raise ValueError(
            f"{feature}: context key {key!r} was set by an earlier step of the chain (ctx.values[{key!r}]); "
            "each key has one owner: read it, or choose another key"
        )
    to_json(value, f"context value {key!r}")
    call.report.set_context[key] = value
