"""Plugin logic, free of any component bindings so it can be unit-tested with plain Python.

Behaviour (identical to examples/rust-mutator and examples/js-mutator): set one label
from the config and, optionally, copy one annotation to another key.

Config::

    {"label": {"key": "team", "value": "platform"},
     "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}}
"""

import json

NAME = "python-mutator"
VERSION = "0.1.0"
DESCRIPTION = "Adds a label from the config and copies an annotation to another key"

CONFIG_SCHEMA = {
    "type": "object",
    "required": ["label"],
    "additionalProperties": False,
    "properties": {
        "label": {
            "type": "object",
            "required": ["key", "value"],
            "properties": {"key": {"type": "string", "minLength": 1}, "value": {"type": "string"}},
        },
        "copyAnnotation": {
            "type": "object",
            "required": ["from", "to"],
            "properties": {"from": {"type": "string", "minLength": 1}, "to": {"type": "string", "minLength": 1}},
        },
    },
}

EXAMPLE = {
    "name": "label and copy",
    "config": {
        "label": {"key": "team", "value": "platform"},
        "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"},
    },
    "input": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default", "annotations": {"example.com/owner": "alice"}},
    },
    "expected": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cfg",
            "namespace": "default",
            "labels": {"team": "platform"},
            "annotations": {"example.com/owner": "alice", "example.com/previous-owner": "alice"},
        },
    },
}


class ConfigError(Exception):
    """The config is unusable; the message names the field."""


class InputError(Exception):
    """The object does not have the shape this plugin needs."""


def _fields(value, where, required, optional=()):
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object")
    for key in value:
        if key not in required and key not in optional:
            raise ConfigError(f"{where}: unknown field {key!r}")
    for key in required:
        if key not in value:
            raise ConfigError(f"{where}: missing field {key!r}")


def _string(value, where, allow_empty=True):
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a string")
    if not allow_empty and value == "":
        raise ConfigError(f"{where} must not be empty")
    return value


def parse_config(text):
    """Parses and checks the config JSON text; returns (key, value, copy) where copy is
    None or (from, to)."""
    try:
        config = json.loads(text) if text.strip() else None
    except json.JSONDecodeError as err:
        raise ConfigError(f"the config is not valid JSON: {err}") from err
    _fields(config, "config", ["label"], ["copyAnnotation"])
    _fields(config["label"], "label", ["key", "value"])
    key = _string(config["label"]["key"], "label.key", allow_empty=False)
    value = _string(config["label"]["value"], "label.value")
    copy = config.get("copyAnnotation")
    if copy is not None:
        _fields(copy, "copyAnnotation", ["from", "to"])
        copy = (
            _string(copy["from"], "copyAnnotation.from", allow_empty=False),
            _string(copy["to"], "copyAnnotation.to", allow_empty=False),
        )
    return key, value, copy


def mutate(config_text, object_text):
    """Returns the mutated object as JSON text."""
    key, value, copy = parse_config(config_text)
    try:
        obj = json.loads(object_text)
    except json.JSONDecodeError as err:
        raise InputError(f"the object is not valid JSON: {err}") from err
    if not isinstance(obj, dict):
        raise InputError("the object must be a JSON object")
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise InputError("metadata must be an object")
    metadata.setdefault("labels", {})[key] = value
    if copy is not None:
        annotations = metadata.get("annotations") or {}
        if copy[0] in annotations:
            annotations[copy[1]] = annotations[copy[0]]
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)
