"""The role classes, adapters and harness, with one small plugin per role."""

import unittest

from syncweave_plugin import (
    Context,
    Direction,
    Example,
    Internal,
    InvalidConfig,
    InvalidInput,
    Mutator,
    Namer,
    ObjectName,
    Projector,
    Rejected,
    Renderer,
    adapter,
    config,
    log,
    testing,
)


class Label(Mutator):
    name = "label"
    description = "sets one label"
    config_schema = {"type": "object"}
    examples = [
        Example(
            "sets team",
            {"key": "team", "value": "a"},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"team": "a"}}},
        )
    ]

    def parse_config(self, cfg):
        config.fields(cfg, "config", required=["key", "value"])
        return config.string(cfg["key"], "key", allow_empty=False), config.string(cfg["value"], "value")

    def mutate(self, ctx, cfg, obj, other):
        key, value = cfg
        if obj.label("locked") == "true":
            raise Rejected("the object is locked")
        obj.set_label(key, value)
        if other is not None:
            obj.set_annotation("other", other.name or "")
        log.debug(f"labelled {obj.name} in {ctx.cluster_name}")


class Renamer(Mutator):
    name = "renamer"

    def mutate(self, ctx, cfg, obj, other):
        obj.metadata["name"] = "other"
        return obj


class Buggy(Mutator):
    name = "buggy"

    def mutate(self, ctx, cfg, obj, other):
        return {}["missing"]


class Prefix(Namer):
    name = "prefix"
    examples = [Example("prefixed", {"prefix": "p-"}, {"metadata": {"name": "a", "namespace": "ns"}},
                        {"name": "p-a", "namespace": "fixture-cluster"})]

    def name_object(self, ctx, cfg, obj):
        return ObjectName(cfg["prefix"] + obj.name, ctx.cluster_name)


class Group(Projector):
    name = "group"
    examples = [Example("group", {"group": "b.io"}, {"spec": {"group": "a.io"}}, {"spec": {"group": "b.io"}})]

    def project(self, cfg, crd):
        crd["spec"]["group"] = cfg["group"]
        return crd


class Namespaces(Renderer):
    name = "namespaces"
    examples = [Example("one per name", {"template": "ns-{name}"}, {"names": ["a", "b"]},
                        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns-a"}},
                         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns-b"}}])]

    def render(self, ctx, cfg, template, values):
        template = template or cfg["template"]
        return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": template.format(name=n)}}
                for n in values["names"]]


class HarnessTest(unittest.TestCase):
    def test_examples_of_every_role(self):
        for plugin in (Label(), Prefix(), Group(), Namespaces()):
            self.assertEqual(testing.check_examples(plugin), 1, plugin.name)

    def test_mutate_in_place_other_and_log(self):
        log.take_captured()
        ctx = Context("c1", "root:a", Direction.SERVICE_TO_KCP, "pr")
        out = testing.mutate(Label(), {"metadata": {"name": "x"}}, {"key": "k", "value": "v"},
                             other={"metadata": {"name": "peer"}}, ctx=ctx)
        self.assertEqual(out, {"metadata": {"name": "x", "labels": {"k": "v"}, "annotations": {"other": "peer"}}})
        self.assertEqual(log.take_captured(), [("debug", "labelled x in c1")])

    def test_errors_are_typed(self):
        plugin = Label()
        with self.assertRaises(InvalidConfig) as caught:
            testing.mutate(plugin, {}, config_text="{")
        self.assertIn("not valid JSON", str(caught.exception))
        with self.assertRaises(InvalidConfig) as caught:
            testing.validate_config(plugin, None)
        self.assertEqual(str(caught.exception), "config must be an object")
        with self.assertRaises(InvalidConfig) as caught:
            testing.validate_config(plugin, {"key": "", "value": "v"})
        self.assertEqual(str(caught.exception), "key must not be empty")
        testing.validate_config(plugin, {"key": "k", "value": "v"})
        good = {"key": "k", "value": "v"}
        for text, needle in [("[1]", "must be a JSON object"), ("nope", "not valid JSON")]:
            with self.assertRaises(InvalidInput) as caught:
                testing.mutate(plugin, config=good, object_text=text)
            self.assertIn(needle, str(caught.exception))
        with self.assertRaises(Rejected):
            testing.mutate(plugin, {"metadata": {"labels": {"locked": "true"}}}, good)
        with self.assertRaises(Internal) as caught:
            testing.mutate(Buggy(), {})
        self.assertIn("KeyError", str(caught.exception))
        self.assertIn("test_harness.py", str(caught.exception))

    def test_harness_applies_the_hosts_identity_rule(self):
        with self.assertRaises(AssertionError) as caught:
            testing.mutate(Renamer(), {"metadata": {"name": "a"}})
        self.assertIn("changed metadata.name from 'a' to 'other'", str(caught.exception))

    def test_check_examples_reports_a_mismatch(self):
        class Wrong(Label):
            examples = [Example("wrong", {"key": "a", "value": "b"}, {}, {"metadata": {}})]

        with self.assertRaises(AssertionError) as caught:
            testing.check_examples(Wrong())
        self.assertIn("example 'wrong'", str(caught.exception))
        self.assertIn('"labels": {"a": "b"}', str(caught.exception))

        class NoExamples(Label):
            examples = []

        with self.assertRaises(AssertionError):
            testing.check_examples(NoExamples())

    def test_describe_serialises_json(self):
        info = adapter.describe(Label())
        self.assertEqual(info["name"], "label")
        self.assertEqual(info["version"], "0.1.0")
        self.assertEqual(info["config_schema"], '{"type":"object"}')
        self.assertEqual(info["examples"][0]["config"], '{"key":"team","value":"a"}')

    def test_namer_and_empty_config(self):
        n = testing.name(Prefix(), {"metadata": {"name": "a"}}, {"prefix": "x-"})
        self.assertEqual(n, ObjectName("x-a", "fixture-cluster"))
        self.assertIsNone(adapter.parse_config(""))
        self.assertIsNone(adapter.parse_config("null"))


if __name__ == "__main__":
    unittest.main()
