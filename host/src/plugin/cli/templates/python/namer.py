"""{{name}}: a syncweave namer. It places each object in a namespace named after the
consumer's logical cluster, under its own name with a prefix from the config.

Config: ``{"prefix": "team-a-"}`` (optional; default no prefix).
"""

from syncweave_plugin import Example, InvalidInput, Namer, ObjectName, config, log


class Plugin(Namer):
    name = "{{name}}"
    version = "0.1.0"
    description = "{{description}}"
    config_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"prefix": {"type": "string"}},
    }
    examples = [
        Example(
            name="prefixed name in the cluster's namespace",
            config={"prefix": "team-a-"},
            input={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "default"}},
            expected={"name": "team-a-w1", "namespace": "fixture-cluster"},
        )
    ]

    def parse_config(self, cfg):
        if cfg is None:
            return ""
        config.fields(cfg, "config", optional=["prefix"])
        return config.string(cfg.get("prefix", ""), "prefix")

    def name_object(self, ctx, prefix, obj):
        if not obj.name:
            raise InvalidInput("metadata.name is missing")
        name = prefix + obj.name
        log.debug(f"naming {name} in {ctx.cluster_name}")
        # A cluster-scoped object (no namespace) stays cluster-scoped.
        namespace = ctx.cluster_name if obj.namespace is not None else None
        return ObjectName(name=name, namespace=namespace)


PLUGIN = Plugin()
