"""Fills a field of the object from another object the consumer owns (contract 0.2).

The consumer names a ConfigMap in the object's namespace at ``spec.subnetRef``; the
plugin reads it (a kcp-side read, which the PublishedResource allows with
``spec.reads.related: true`` and a related resource of kind ConfigMap) and copies its
``data.subnetID`` to ``spec.subnetID`` of the copy. While the ConfigMap (or the key) is
missing it leaves the field out and reports a Warning ``SubnetMissing``: the object
still syncs, and the consumer sees why the field is empty. The agent re-runs the plugin
when the ConfigMap appears or changes.

Config (all optional)::

    {"refPath": "subnetRef", "key": "subnetID", "field": "subnetID"}
"""

from syncweave_plugin import (Example, Mutator, ReadDeclaration, ReadFixture, Resource,
                              Side, config, reads, report)

CONFIGMAPS = Resource.core("v1", "configmaps")

DEFAULTS = {"refPath": "subnetRef", "key": "subnetID", "field": "subnetID"}


def _subnet(name, subnet_id):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "shop"},
            "data": {"subnetID": subnet_id}}


OBJECT = {"apiVersion": "example.com/v1", "kind": "CronTab",
          "metadata": {"name": "vm", "namespace": "shop"},
          "spec": {"subnetRef": "net-a"}}

EXAMPLES = [
    Example("fills the field", None, OBJECT,
            {"apiVersion": "example.com/v1", "kind": "CronTab",
             "metadata": {"name": "vm", "namespace": "shop"},
             "spec": {"subnetRef": "net-a", "subnetID": "subnet-0a1b"}},
            reads=[ReadFixture(Side.KCP, CONFIGMAPS, [_subnet("net-a", "subnet-0a1b")])]),
    Example("warns while the subnet is missing", None, OBJECT, OBJECT,
            reads=[ReadFixture(Side.KCP, CONFIGMAPS, [])]),
]


class SubnetFromConfigMap(Mutator):
    contract = "0.2"
    name = "python-subnet"
    version = "0.1.0"
    description = "Copies data.subnetID of the ConfigMap named at spec.subnetRef into spec.subnetID"
    config_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {k: {"type": "string", "minLength": 1} for k in DEFAULTS},
    }
    reads = [ReadDeclaration(Side.KCP, CONFIGMAPS,
                             "the ConfigMap named at spec.subnetRef, in the object's namespace")]
    examples = EXAMPLES

    def parse_config(self, cfg):
        if cfg is None:
            return dict(DEFAULTS)
        config.fields(cfg, "config", optional=list(DEFAULTS))
        out = dict(DEFAULTS)
        for k in DEFAULTS:
            if k in cfg:
                out[k] = config.string(cfg[k], k, allow_empty=False)
        return out

    def mutate(self, ctx, cfg, obj, other):
        ref = obj.get_path("spec." + cfg["refPath"])
        if not ref:
            return obj
        cm = reads.get(Side.KCP, CONFIGMAPS, name=ref, namespace=obj.namespace)
        value = None if cm is None else (cm.get("data") or {}).get(cfg["key"])
        if not value:
            what = "does not exist" if cm is None else f"has no data.{cfg['key']}"
            report.warning("SubnetMissing",
                           f"ConfigMap {obj.namespace}/{ref} {what}; spec.{cfg['field']} "
                           "is left out until it does")
            return obj
        obj.set_path("spec." + cfg["field"], value)
        return obj


PLUGIN = SubnetFromConfigMap()
