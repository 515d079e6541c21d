"""{{name}}: a syncweave projector. It publishes a CRD under another API group (the one
in its config) and renames it to match.

Config: ``{"group": "example.org"}``.
"""

from syncweave_plugin import Example, InvalidConfig, InvalidInput, Projector, config, log, path

CRD_IN = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.internal.example.com"},
    "spec": {"group": "internal.example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"}},
}
CRD_OUT = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.org"},
    "spec": {"group": "example.org", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"}},
}


class Plugin(Projector):
    name = "{{name}}"
    version = "0.1.0"
    description = "{{description}}"
    config_schema = {
        "type": "object",
        "required": ["group"],
        "additionalProperties": False,
        "properties": {"group": {"type": "string", "minLength": 1}},
    }
    examples = [Example(name="moves the CRD to another group", config={"group": "example.org"}, input=CRD_IN, expected=CRD_OUT)]

    def parse_config(self, cfg):
        config.fields(cfg, "config", required=["group"])
        group = config.string(cfg["group"], "group", allow_empty=False)
        if "." not in group:
            raise InvalidConfig(f"group: {group!r} is not a fully qualified API group (e.g. example.org)")
        return group

    def project(self, group, crd):
        plural = path.get(crd, "spec.names.plural")
        if not isinstance(plural, str) or not plural:
            raise InvalidInput("spec.names.plural is missing")
        path.set(crd, "spec.group", group)
        path.set(crd, "metadata.name", f"{plural}.{group}")
        log.debug(f"projected {plural} into {group}")
        return crd


PLUGIN = Plugin()
