"""{{name}}: a syncweave mutator. It sets the labels named in its config on every object
it sees.

Config: ``{"labels": {"team": "platform"}}``.
"""

from syncweave_plugin import Example, InvalidConfig, Mutator, config, log


class Plugin(Mutator):
    name = "{{name}}"
    version = "0.1.0"
    description = "{{description}}"
    config_schema = {
        "type": "object",
        "required": ["labels"],
        "additionalProperties": False,
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
    }
    # Worked examples: `syncweave plugin test --examples` and test_plugin.py run them,
    # and the host can use them as a self-test.
    examples = [
        Example(
            name="sets a label",
            config={"labels": {"team": "platform"}},
            input={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"}},
            expected={
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": "default", "labels": {"team": "platform"}},
            },
        )
    ]

    def parse_config(self, cfg):
        """Checks the config; what it returns is what mutate() gets as its config."""
        config.fields(cfg, "config", required=["labels"])
        labels = config.string_map(cfg["labels"], "labels")
        if "" in labels:
            raise InvalidConfig("labels: a label key must not be empty")
        return labels

    def mutate(self, ctx, labels, obj, other):
        for key, value in labels.items():
            obj.set_label(key, value)
        log.debug(f"set {len(labels)} labels on {obj.name}")
        return obj


PLUGIN = Plugin()
