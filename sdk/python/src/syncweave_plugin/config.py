"""Checking configs field by field. Every helper raises
:class:`~syncweave_plugin.errors.InvalidConfig` with a message that names the field, so
a user reading the host's error knows what to fix.

    def parse_config(self, config):
        fields(config, "config", required=["label"], optional=["copyAnnotation"])
        fields(config["label"], "label", required=["key", "value"])
        return string(config["label"]["key"], "label.key", allow_empty=False)
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from .errors import InvalidConfig


def fields(value: Any, where: str, required: Iterable[str] = (), optional: Iterable[str] = ()) -> Dict[str, Any]:
    """``value`` must be an object with every ``required`` key and no key outside
    ``required`` and ``optional`` (typos should not pass silently). Returns it."""
    required = list(required)
    optional = list(optional)
    if not isinstance(value, dict):
        raise InvalidConfig(f"{where} must be an object")
    for k in value:
        if k not in required and k not in optional:
            raise InvalidConfig(f"{where}: unknown field {k!r}")
    for k in required:
        if k not in value:
            raise InvalidConfig(f"{where}: missing field {k!r}")
    return value


def string(value: Any, where: str, *, allow_empty: bool = True) -> str:
    if not isinstance(value, str):
        raise InvalidConfig(f"{where} must be a string")
    if not allow_empty and value == "":
        raise InvalidConfig(f"{where} must not be empty")
    return value


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidConfig(f"{where} must be true or false")
    return value


def integer(value: Any, where: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
        raise InvalidConfig(f"{where} must be an integer")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidConfig(f"{where} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise InvalidConfig(f"{where} must be at most {maximum}")
    return value


def string_map(value: Any, where: str) -> Dict[str, str]:
    """An object whose values are all strings (labels, annotations)."""
    if not isinstance(value, dict):
        raise InvalidConfig(f"{where} must be an object of strings")
    for k, v in value.items():
        if not isinstance(v, str):
            raise InvalidConfig(f"{where}.{k} must be a string")
    return value


def string_list(value: Any, where: str) -> List[str]:
    if not isinstance(value, list):
        raise InvalidConfig(f"{where} must be a list of strings")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise InvalidConfig(f"{where}[{i}] must be a string")
    return value
