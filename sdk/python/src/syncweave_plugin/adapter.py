"""String-level adapters: JSON text in, role method call, JSON text out, errors typed.

The component exports (:mod:`syncweave_plugin.component`) and the local harness
(:mod:`syncweave_plugin.testing`) both go through these functions, so a unit test
exercises exactly what the host calls. Not needed in plugin code.
"""

from __future__ import annotations

import json
import traceback
from typing import Any, Callable, List, Optional, TypeVar

from .errors import Internal, InvalidConfig, InvalidInput, PluginError
from .objects import Object
from .plugin import Mutator, Namer, Plugin, Projector, Renderer
from .types import Context, ObjectName

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
    except RecursionError:
        raise Internal("maximum recursion depth exceeded") from None
    except Exception as err:  # noqa: BLE001 - every plugin bug must become a typed error
        where = ""
        frames = traceback.extract_tb(err.__traceback__)
        if frames:
            last = frames[-1]
            where = f" (at {last.filename}:{last.lineno} in {last.name})"
        raise Internal(f"{type(err).__name__}: {err}{where}") from None


def describe(plugin: Plugin) -> dict:
    """``describe()`` with the JSON fields serialised."""
    return {
        "name": plugin.name or type(plugin).__name__,
        "version": plugin.version,
        "description": plugin.description,
        "config_schema": None if plugin.config_schema is None else to_json(plugin.config_schema, "config schema"),
        "examples": [
            {
                "name": ex.name,
                "config": to_json(ex.config, f"config of example {ex.name!r}"),
                "input": to_json(ex.input, f"input of example {ex.name!r}"),
                "expected": None if ex.expected is None else to_json(ex.expected, f"expected output of example {ex.name!r}"),
            }
            for ex in plugin.examples
        ],
    }


def validate_config(plugin: Plugin, config: str) -> None:
    """Raises InvalidConfig (or another PluginError) when the config is unusable."""

    def run() -> None:
        plugin.validate_config(parse_config(config))

    _guard(run)


def _config(plugin: Plugin, config: str) -> Any:
    return plugin.parse_config(parse_config(config))


def mutate(plugin: Mutator, ctx: Context, config: str, obj: str, other: Optional[str]) -> str:
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

    return _guard(run)


def name(plugin: Namer, ctx: Context, config: str, obj: str) -> ObjectName:
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

    return _guard(run)


def project(plugin: Projector, config: str, crd: str) -> str:
    def run() -> str:
        cfg = _config(plugin, config)
        c = _parse_input("CRD", crd)
        if not isinstance(c, dict):
            raise InvalidInput("the CRD must be a JSON object")
        result = plugin.project(cfg, c)
        if not isinstance(result, dict):
            raise Internal(f"project returned {type(result).__name__}, not an object")
        return to_json(result, "projected CRD")

    return _guard(run)


def render(plugin: Renderer, ctx: Context, config: str, template: str, values: str) -> List[str]:
    def run() -> List[str]:
        cfg = _config(plugin, config)
        v = _parse_input("values", values)
        result = plugin.render(ctx, cfg, template, v)
        if not isinstance(result, (list, tuple)):
            raise Internal(f"render returned {type(result).__name__}, not a list of objects")
        return [to_json(doc, f"rendered document {i}") for i, doc in enumerate(result)]

    return _guard(run)
