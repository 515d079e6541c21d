"""What a call reports beside its output (contract 0.2): results the host turns into
Events on the object (Normal or Warning), conditions, and context values for the later
steps of a mutation chain. None of them fails the call; raise a
:class:`~syncweave_plugin.errors.PluginError` for that.

    from syncweave_plugin import report

    report.warning("NamespaceMissing", f"namespace {ns} not found; labels not copied")
    report.normal("LabelsCopied", f"copied {n} labels from namespace {ns}")
    report.condition("LabelsCopied", "True", "Copied", f"{n} labels")
    report.set_context("tenant", tenant)         # ctx.values["tenant"] in later steps

Reasons and condition types are CamelCase, and both are checked as Kubernetes and the
host check them (the same rules as ``host/runtime/src/rules.rs``), at the call that sets
them. A context key that an earlier step set cannot be set again (each key has one owner).
Works only during a call of a plugin that targets contract 0.2;
:func:`syncweave_plugin.testing.call` returns the report for assertions and also applies
the host's default bounds on a report's size (:data:`BOUNDS`).
"""

from __future__ import annotations

import re
from typing import Any, Union

from . import _call
from .adapter import to_json
from .contract import ContractError
from .types import CallResult, Condition, Severity

_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_CONTEXT_KEY = re.compile(r"^[A-Za-z0-9._/-]{1,253}$")
STATUSES = ("True", "False", "Unknown")
MAX_CONDITION_MESSAGE = 32768
"""Longest condition message (bytes) the Kubernetes API accepts."""

BOUNDS = {"bytes": 65536, "results": 32, "conditions": 16, "set_context": 32}
"""The host's default bounds on one call's report: all its strings together (bytes, the
context values as JSON text), and the number of results, conditions and context values.
The harness applies them; the host may be configured with others."""


def _reason(value: Any, what: str, feature: str) -> str:
    if not isinstance(value, str) or len(value) > 1024 or not _REASON.match(value):
        raise ValueError(
            f"{feature}: {what} {value!r} is not a valid reason; use CamelCase letters and digits "
            "(at most 1024, starting with a letter), such as \"NamespaceMissing\", as Kubernetes "
            "Events and conditions require"
        )
    return value


def _condition_type(value: Any, feature: str) -> str:
    ok = isinstance(value, str) and 0 < len(value) <= 316
    if ok:
        prefix, _, name = value.rpartition("/")
        ok = bool(_LABEL_NAME.match(name)) and (
            not prefix or (len(prefix) <= 253 and all(_DNS_LABEL.match(p) for p in prefix.split(".")))
        )
    if not ok:
        raise ValueError(
            f"{feature}: type {value!r} is not a valid condition type; use CamelCase letters and digits "
            "(at most 63, optionally after a DNS prefix and '/'), such as \"SubnetResolved\""
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
        CallResult(severity, _reason(reason, "reason", feature), _text(message, "message", feature))
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
    cond = Condition(_condition_type(type, feature), status, _reason(reason, "reason", feature), _text(message, "message", feature))
    if len(cond.message.encode()) > MAX_CONDITION_MESSAGE:
        raise ValueError(f"{feature}: message is {len(cond.message.encode())} bytes; Kubernetes accepts at most {MAX_CONDITION_MESSAGE}")
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
    if not isinstance(key, str) or not _CONTEXT_KEY.match(key):
        raise ValueError(
            f"{feature}: key {key!r} is not a valid context key; use 1 to 253 letters, digits, '-', '_', '.' "
            "and '/' (e.g. \"example.com/subnet\")"
        )
    if key in call.values:
        raise ValueError(
            f"{feature}: context key {key!r} was set by an earlier step of the chain (ctx.values[{key!r}]); "
            "each key has one owner: read it, or choose another key"
        )
    to_json(value, f"context value {key!r}")
    call.report.set_context[key] = value


def check_bounds(report: "Report", bounds: "dict | None" = None) -> None:  # noqa: F821
    """Raises ValueError, as the host fails the call, when ``report`` is over ``bounds``
    (default :data:`BOUNDS`)."""
    from .adapter import report_fields

    bounds = dict(BOUNDS, **(bounds or {}))
    fields = report_fields(report)
    size = sum(len(s.encode()) for entry in fields["results"] for s in entry[1:])
    size += sum(len(s.encode()) for entry in fields["conditions"] for s in entry)
    size += sum(len(k.encode()) + len(v.encode()) for k, v in fields["set_context"])
    if size > bounds["bytes"]:
        raise ValueError(
            f"the report is {size} bytes, over the host's limit of {bounds['bytes']} bytes; report shorter "
            "messages or fewer results, conditions and context values"
        )
    for field, n in (("results", len(fields["results"])), ("conditions", len(fields["conditions"])),
                     ("set_context", len(fields["set_context"]))):
        if n > bounds[field]:
            raise ValueError(f"report.{field} has {n} entries, over the host's limit of {bounds[field]}")
