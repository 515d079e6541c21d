"""String-level adapters: JSON text in, role method call, JSON text out, errors typed.

The component exports (:mod:`syncweave_plugin.component`) and the local harness
(:mod:`syncweave_plugin.testing`) both go through these functions, so a unit test
exercises exactly what the host calls. Not needed in plugin code.

Every role function checks the plugin against its contract version
(:func:`syncweave_plugin.contract.check`), opens the call that
:mod:`~syncweave_plugin.reads` and :mod:`~syncweave_plugin.report` use, and returns
``(output, report)``; under contract 0.1 the report is always empty.
"""

from __future__ import annotations

import json
import traceback
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar

from . import _call, contract
from .contract import ContractError
from .errors import Internal, InvalidConfig, InvalidInput, PluginError
from .objects import Object
from .plugin import Mutator, Namer, Plugin, Projector, Renderer
from .types import Context, ObjectName, Report, Resource

T = TypeVar("T")


def to_json(value: Any, what: str = "output") -> str:
    """Compact JSON text, as the host expects it."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise Internal(f"the {what} is not JSON: {err}") from None


def parse_config(text: str) -> Any:
    """An absent config arrives as ``null`` or an empty string: both are ``None``."""
    if text is None or text.strip() == "":
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidConfig(f"the config is not valid JSON: {err}") from None


def _parse_input(what: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidInput(f"the {what} is not valid JSON: {err}") from None


def _parse_object(what: str, text: str) -> Object:
    value = _parse_input(what, text)
    if not isinstance(value, dict):
        raise InvalidInput(f"the {what} must be a JSON object")
    return Object(value)


def _guard(call: Callable[[], T]) -> T:
    """Typed errors pass through; anything else is a plugin bug, reported as internal
    with where it happened."""
    try:
        return call()
    except PluginError:
        raise
    except ContractError as err:
        raise Internal(str(err)) from None
    except RecursionError:
        raise Internal("maximum recursion depth exceeded") from None
    except Exception as err:  # noqa: BLE001 - every plugin bug must become a typed error
        where = ""
        frames = traceback.extract_tb(err.__traceback__)
        if frames:
            last = frames[-1]
            where = f" (at {last.filename}:{last.lineno} in {last.name})"
        raise Internal(f"{type(err).__name__}: {err}{where}") from None


def _resource(r: Resource) -> dict:
    return {"group": r.group, "version": r.version, "resource": r.resource}


def describe(plugin: Plugin) -> dict:
    """``describe()`` with the JSON fields serialised. Under contract 0.2 it has the
    plugin's ``reads`` and each example's read fixtures and context values too."""
    version = contract.check(plugin)
    info: dict = {
        "name": plugin.name or type(plugin).__name__,
        "version": plugin.version,
        "description": plugin.description,
        "config_schema": None if plugin.config_schema is None else to_json(plugin.config_schema, "config schema"),
        "examples": [],
    }
    for ex in plugin.examples:
        example = {
            "name": ex.name,
            "config": to_json(ex.config, f"config of example {ex.name!r}"),
            "input": to_json(ex.input, f"input of example {ex.name!r}"),
            "expected": None if ex.expected is None else to_json(ex.expected, f"expected output of example {ex.name!r}"),
        }
        if version != "0.1":
            example["reads"] = [
                {
                    "side": f.side.value,
                    "resource": _resource(f.resource),
                    "objects": [to_json(o, f"read fixture object of example {ex.name!r}") for o in f.objects],
                }
                for f in ex.reads
            ]
            example["values"] = [(k, to_json(v, f"context value {k!r} of example {ex.name!r}")) for k, v in dict(ex.values).items()]
        info["examples"].append(example)
    if version != "0.1":
        info["reads"] = [{"side": d.side.value, "resource": _resource(d.resource), "purpose": d.purpose} for d in plugin.reads]
    return info


def context_values(entries: Iterable[Tuple[str, str]]) -> Dict[str, Any]:
    """The contract's ``context.values`` (key and JSON text) as JSON values by key."""
    values: Dict[str, Any] = {}
    for key, text in entries:
        try:
            values[key] = json.loads(text)
        except (TypeError, json.JSONDecodeError) as err:
            raise InvalidInput(f"context value {key!r} is not valid JSON: {err}") from None
    return values


def report_fields(report: Report) -> dict:
    """The contract's ``report`` record as plain values: ``results`` as ``(severity,
    reason, message)``, ``conditions`` as ``(type, status, reason, message)`` and
    ``set_context`` as ``(key, JSON text)``."""
    return {
        "results": [(r.severity.value, r.reason, r.message) for r in report.results],
        "conditions": [(c.type, c.status, c.reason, c.message) for c in report.conditions],
        "set_context": [(k, to_json(v, f"context value {k!r}")) for k, v in report.set_context.items()],
    }


def validate_config(plugin: Plugin, config: str) -> None:
    """Raises InvalidConfig (or another PluginError) when the config is unusable."""

    def run() -> None:
        contract.check(plugin)
        plugin.validate_config(parse_config(config))

    _guard(run)


def _config(plugin: Plugin, config: str) -> Any:
    return plugin.parse_config(parse_config(config))


def _call_plugin(plugin: Plugin, ctx: Optional[Context], reads: Optional[_call.ReadsBackend], run: Callable[[], T]) -> Tuple[T, Report]:
    """Runs one role call: contract checked, the call opened for reads and report,
    typed errors out."""

    def checked() -> T:
        version = contract.check(plugin)
        values = ctx.values if ctx is not None and version != "0.1" else {}
        if ctx is not None and ctx.values and version == "0.1":
            raise contract.needs_02(plugin, "context values (ctx.values)")
        call = _call.Call(plugin, version, values, reads)
        with _call.active(call):
            out = run()
        report_fields(call.report)  # every context value must be JSON before it leaves
        outcome.append(call.report)
        return out

    outcome: List[Report] = []
    result = _guard(checked)
    return result, outcome[0]


def mutate(
    plugin: Mutator, ctx: Context, config: str, obj: str, other: Optional[str], reads: Optional[_call.ReadsBackend] = None
) -> Tuple[str, Report]:
    def run() -> str:
        cfg = _config(plugin, config)
        o = _parse_object("object", obj)
        oth = None if other is None else _parse_object("other object", other)
        result = plugin.mutate(ctx, cfg, o, oth)
        if result is None:
            result = o
        if not isinstance(result, dict):
            raise Internal(f"mutate returned {type(result).__name__}, not an object")
        return to_json(result, "mutated object")

    return _call_plugin(plugin, ctx, reads, run)


def name(plugin: Namer, ctx: Context, config: str, obj: str, reads: Optional[_call.ReadsBackend] = None) -> Tuple[ObjectName, Report]:
    def run() -> ObjectName:
        cfg = _config(plugin, config)
        o = _parse_object("object", obj)
        result = plugin.name_object(ctx, cfg, o)
        if isinstance(result, dict):
            extra = set(result) - {"name", "namespace"}
            if extra or not isinstance(result.get("name"), str):
                raise Internal('name_object must return ObjectName or {"name": str, "namespace": str | None}')
            result = ObjectName(result["name"], result.get("namespace"))
        if not isinstance(result, ObjectName):
            raise Internal(f"name_object returned {type(result).__name__}, not an ObjectName")
        return result

    return _call_plugin(plugin, ctx, reads, run)


def project(plugin: Projector, config: str, crd: str) -> Tuple[str, Report]:
    """The report is always empty: a projection reports nothing (and reads nothing)."""

    def run() -> str:
        cfg = _config(plugin, config)
        c = _parse_input("CRD", crd)
        if not isinstance(c, dict):
            raise InvalidInput("the CRD must be a JSON object")
        result = plugin.project(cfg, c)
        if not isinstance(result, dict):
            raise Internal(f"project returned {type(result).__name__}, not an object")
        return to_json(result, "projected CRD")

    return _call_plugin(plugin, None, None, run)


def render(
    plugin: Renderer, ctx: Context, config: str, template: str, values: str, reads: Optional[_call.ReadsBackend] = None
) -> Tuple[List[str], Report]:
    def run() -> List[str]:
        cfg = _config(plugin, config)
        v = _parse_input("values", values)
        result = plugin.render(ctx, cfg, template, v)
        if not isinstance(result, (list, tuple)):
            raise Internal(f"render returned {type(result).__name__}, not a list of objects")
        return [to_json(doc, f"rendered document {i}") for i, doc in enumerate(result)]

    return _call_plugin(plugin, ctx, reads, run)
