"""The example mutator, written with the syncweave Python SDK.

Behaviour (identical to examples/rust-mutator and examples/js-mutator): set one label
from the config and, optionally, copy one annotation to another key.

Config::

    {"label": {"key": "team", "value": "platform"},
     "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}}
"""

from syncweave_plugin import Example, Mutator, config, log

EXAMPLE = Example(
    name="label and copy",
    config={
        "label": {"key": "team", "value": "platform"},
        "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"},
    },
    input={
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default", "annotations": {"example.com/owner": "alice"}},
    },
    expected={
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cfg",
            "namespace": "default",
            "labels": {"team": "platform"},
            "annotations": {"example.com/owner": "alice", "example.com/previous-owner": "alice"},
        },
    },
)


class LabelAndCopy(Mutator):
    name = "python-mutator"
    version = "0.1.0"
    description = "Adds a label from the config and copies an annotation to another key"
    config_schema = {
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
    examples = [EXAMPLE]

    def parse_config(self, cfg):
        """Returns (key, value, copy) where copy is None or (from, to); errors name the field."""
        config.fields(cfg, "config", required=["label"], optional=["copyAnnotation"])
        config.fields(cfg["label"], "label", required=["key", "value"])
        key = config.string(cfg["label"]["key"], "label.key", allow_empty=False)
        value = config.string(cfg["label"]["value"], "label.value")
        copy = cfg.get("copyAnnotation")
        if copy is not None:
            config.fields(copy, "copyAnnotation", required=["from", "to"])
            copy = (
                config.string(copy["from"], "copyAnnotation.from", allow_empty=False),
                config.string(copy["to"], "copyAnnotation.to", allow_empty=False),
            )
        return key, value, copy

    def mutate(self, ctx, cfg, obj, other):
        key, value, copy = cfg
        obj.set_label(key, value)
        if copy is not None:
            source = obj.annotation(copy[0])
            if source is not None:
                obj.set_annotation(copy[1], source)
        log.debug(f"mutated an object for {ctx.owner} in {ctx.cluster_name}")
        return obj


PLUGIN = LabelAndCopy()
