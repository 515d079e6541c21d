"""{{name}}: a syncweave renderer. Its templates are JSON documents (one object, or a list
of objects) in which ``${Key}`` is replaced by the string value of ``Key`` in the values
(for InitTemplates: ClusterName and ClusterPath).

Config: ``{"template": "..."}`` (optional): rendered when the call passes an empty
template, so that the config alone is a complete example.
"""

import json
import re

from syncweave_plugin import Example, InvalidInput, Renderer, config, log

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def substitute(template, values):
    """Replaces ``${Key}`` with the values' ``Key`` (escaped for a JSON string)."""

    def value(match):
        key = match.group(1)
        v = values.get(key) if isinstance(values, dict) else None
        if isinstance(v, bool):
            v = "true" if v else "false"
        if not isinstance(v, (str, int, float)):
            raise InvalidInput(f"the template refers to {key!r}, but the values have no string or number of that name")
        return json.dumps(str(v))[1:-1]

    if "${" in PLACEHOLDER.sub("", template):
        raise InvalidInput("the template has a ${ without a closing }")
    return PLACEHOLDER.sub(value, template)


class Plugin(Renderer):
    name = "{{name}}"
    version = "0.1.0"
    description = "{{description}}"
    config_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"template": {"type": "string"}},
    }
    examples = [
        Example(
            name="a namespace per workspace",
            config={
                "template": '{"apiVersion": "v1", "kind": "Namespace", '
                '"metadata": {"name": "ws-${ClusterName}", "annotations": {"path": "${ClusterPath}"}}}'
            },
            input={"ClusterName": "2x8fkdtr3b1z", "ClusterPath": "root:org:team"},
            expected=[
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": "ws-2x8fkdtr3b1z", "annotations": {"path": "root:org:team"}},
                }
            ],
        )
    ]

    def parse_config(self, cfg):
        if cfg is None:
            return None
        config.fields(cfg, "config", optional=["template"])
        return config.string(cfg["template"], "template") if "template" in cfg else None

    def render(self, ctx, default_template, template, values):
        template = template if template.strip() else default_template
        if not template:
            raise InvalidInput("no template: pass one, or set template in the config")
        try:
            doc = json.loads(substitute(template, values))
        except json.JSONDecodeError as err:
            raise InvalidInput(f"the rendered template is not JSON: {err}") from None
        docs = doc if isinstance(doc, list) else [doc]
        log.debug(f"rendered {len(docs)} objects for {ctx.cluster_name}")
        return docs


PLUGIN = Plugin()
