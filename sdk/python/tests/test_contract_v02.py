"""Contract 0.2: opting in, reads, the report, context values, describe() and the
harness's read fixtures."""

import unittest

from syncweave_plugin import (
    ContractError,
    Example,
    Internal,
    InvalidInput,
    Mutator,
    Namer,
    ObjectName,
    Projector,
    ReadDeclaration,
    ReadFixture,
    ReadInvalid,
    ReadNotAllowed,
    ReadNotServed,
    ReadUnavailable,
    Renderer,
    Resource,
    Side,
    adapter,
    contract,
    reads,
    report,
    selector,
    testing,
)
from syncweave_plugin.types import CallResult, Condition, Context, Severity

NAMESPACES = Resource.core("v1", "namespaces")
CONFIGMAPS = Resource.core("v1", "configmaps")
NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "a", "env": "prod"}}}


class CopyLabels(Mutator):
    contract = "0.2"
    name = "copy-labels"
    reads = [
        ReadDeclaration(Side.KCP, NAMESPACES, "copies the Namespace's labels"),
        ReadDeclaration(Side.SERVICE, CONFIGMAPS, "counts the tenant's config maps"),
    ]
    examples = [
        Example(
            "copies",
            None,
            {"metadata": {"name": "w", "namespace": "shop"}},
            {"metadata": {"name": "w", "namespace": "shop", "labels": {"team": "a", "env": "prod", "tenant": "t1"}}},
            reads=[ReadFixture(Side.KCP, NAMESPACES, [NS])],
            values={"tenant": "t1"},
        )
    ]

    def mutate(self, ctx, cfg, obj, other):
        tenant = ctx.values.get("tenant")
        if tenant is not None:
            obj.set_label("tenant", tenant)
        ns = reads.get(Side.KCP, NAMESPACES, name=obj.namespace)
        if ns is None:
            report.warning("NamespaceMissing", f"namespace {obj.namespace} not found")
            report.condition("LabelsCopied", False, "NamespaceMissing", "nothing copied")
            return obj
        for k, v in ns.labels.items():
            obj.set_label(k, v)
        report.normal("LabelsCopied", f"{len(ns.labels)} labels")
        report.condition("LabelsCopied", "True", "Copied")
        report.set_context("copied", sorted(ns.labels))
        return obj


class Lister(Mutator):
    contract = "0.2"
    name = "lister"
    reads = [ReadDeclaration(Side.SERVICE, CONFIGMAPS, "lists config maps")]

    def mutate(self, ctx, cfg, obj, other):
        found = reads.list(Side.SERVICE, CONFIGMAPS, namespace=cfg.get("namespace"), label_selector=cfg.get("selector"))
        obj.set_annotation("found", ",".join(sorted(o.name for o in found)))
        return obj


class Undeclared(Mutator):
    contract = "0.2"
    name = "undeclared"

    def mutate(self, ctx, cfg, obj, other):
        reads.get(Side.KCP, NAMESPACES, name="x")


class OldStyle(Mutator):
    """A 0.1 plugin (no contract attribute) that tries 0.2 features."""

    name = "old-style"

    def mutate(self, ctx, cfg, obj, other):
        if cfg == "read":
            reads.get(Side.KCP, NAMESPACES, name="x")
        if cfg == "report":
            report.warning("Nope", "no")
        return obj


CM = lambda ns, name, **labels: {"metadata": {"name": name, "namespace": ns, "labels": labels}}  # noqa: E731
CMS = [CM("a", "one", app="db", tier="1"), CM("a", "two", app="web"), CM("b", "three", app="db", tier="3")]


class OptInTest(unittest.TestCase):
    def test_default_is_01_and_versions_normalise(self):
        self.assertEqual(contract.of(OldStyle()), "0.1")
        self.assertEqual(contract.of(CopyLabels()), "0.2")
        self.assertEqual(contract.normalize("0.2.0"), "0.2")
        with self.assertRaises(ContractError) as caught:
            contract.normalize("0.3", "X.contract")
        self.assertEqual(str(caught.exception), "X.contract = '0.3' is not a contract version this SDK knows; use one of '0.1', '0.2'")

    def test_01_plugins_cannot_use_02_features(self):
        with self.assertRaises(Internal) as caught:
            testing.mutate(OldStyle(), {}, "read")
        msg = str(caught.exception)
        self.assertIn("reads.get is a contract 0.2 feature, but OldStyle targets contract 0.1", msg)
        self.assertIn('set contract = "0.2" on class OldStyle', msg)
        self.assertIn("[tool.syncweave]", msg)
        with self.assertRaises(Internal) as caught:
            testing.mutate(OldStyle(), {}, "report")
        self.assertIn("report.warning is a contract 0.2 feature", str(caught.exception))
        with self.assertRaises(ContractError) as caught:
            testing.mutate(OldStyle(), {}, reads=[ReadFixture(Side.KCP, NAMESPACES, [])])
        self.assertIn("read fixtures is a contract 0.2 feature", str(caught.exception))
        with self.assertRaises(Internal) as caught:
            testing.mutate(OldStyle(), {}, ctx_values={"a": 1})
        self.assertIn("context values (ctx.values) is a contract 0.2 feature", str(caught.exception))

    def test_declarations_are_checked_against_the_contract(self):
        class DeclaresUnder01(Mutator):
            name = "d"
            reads = [ReadDeclaration(Side.KCP, NAMESPACES, "x")]

        with self.assertRaises(ContractError) as caught:
            adapter.describe(DeclaresUnder01())
        self.assertIn("declaring reads (DeclaresUnder01.reads) is a contract 0.2 feature", str(caught.exception))

        class FixtureUnder01(Mutator):
            name = "f"
            examples = [Example("e", None, {}, values={"k": 1})]

        with self.assertRaises(ContractError) as caught:
            testing.check_examples(FixtureUnder01())
        self.assertIn("context values in example 'e' is a contract 0.2 feature", str(caught.exception))

        class ReadingProjector(Projector):
            contract = "0.2"
            name = "p"
            reads = [ReadDeclaration(Side.KCP, NAMESPACES, "x")]

        with self.assertRaises(ContractError) as caught:
            contract.check(ReadingProjector())
        self.assertIn("is a Projector, which cannot read", str(caught.exception))

        class StrayFixture(Mutator):
            contract = "0.2"
            name = "s"
            examples = [Example("e", None, {}, reads=[ReadFixture(Side.SERVICE, CONFIGMAPS, [])])]

        with self.assertRaises(ContractError) as caught:
            contract.check(StrayFixture())
        self.assertIn(
            "example 'e' has a read fixture for v1/configmaps on service, which StrayFixture does not declare in reads; "
            "add ReadDeclaration(Side.SERVICE, Resource.core('v1', 'configmaps'), purpose)",
            str(caught.exception),
        )

        class UnknownVersion(Mutator):
            contract = "1.0"
            name = "u"

        with self.assertRaises(ContractError) as caught:
            testing.mutate(UnknownVersion(), {})
        self.assertIn("UnknownVersion.contract = '1.0' is not a contract version", str(caught.exception))
        # What the host would see: validate-config fails as internal, naming the attribute.
        with self.assertRaises(Internal) as caught:
            adapter.validate_config(UnknownVersion(), "null")
        self.assertIn("UnknownVersion.contract = '1.0' is not a contract version", str(caught.exception))

    def test_types_refuse_what_the_host_would(self):
        with self.assertRaises(ValueError) as caught:
            Resource.core("v1", "Namespace")
        self.assertIn("looks like a kind", str(caught.exception))
        with self.assertRaises(ValueError):
            Resource("", "apps/v1", "deployments")
        self.assertEqual(Resource.of("apps/v1", "deployments"), Resource("apps", "v1", "deployments"))
        self.assertEqual(str(Resource.of("apps/v1", "deployments")), "apps/v1/deployments")
        with self.assertRaises(ValueError) as caught:
            ReadDeclaration(Side.KCP, NAMESPACES, " ")
        self.assertIn("purpose must say why", str(caught.exception))
        self.assertEqual(ReadDeclaration("kcp", NAMESPACES, "p").side, Side.KCP)
        with self.assertRaises(ValueError):
            ReadDeclaration("cluster", NAMESPACES, "p")


class ReadsTest(unittest.TestCase):
    def test_get_finds_by_namespace_and_name(self):
        out = testing.call(CopyLabels(), {"metadata": {"name": "w", "namespace": "shop"}},
                           reads=[ReadFixture(Side.KCP, NAMESPACES, [NS])])
        self.assertEqual(out.output["metadata"]["labels"], {"team": "a", "env": "prod"})
        # A Namespace is cluster-scoped: the fixture has no namespace, and neither has the get.
        with_ns = dict(NS, metadata=dict(NS["metadata"], namespace="shop"))
        out = testing.call(CopyLabels(), {"metadata": {"name": "w", "namespace": "shop"}},
                           reads=[ReadFixture(Side.KCP, NAMESPACES, [with_ns])])
        self.assertEqual(out.report.warnings, [("NamespaceMissing", "namespace shop not found")])

    def test_list_filters_by_namespace_and_selector(self):
        fixtures = [ReadFixture(Side.SERVICE, CONFIGMAPS, CMS)]
        found = lambda cfg: testing.mutate(Lister(), {}, cfg, reads=fixtures)["metadata"]["annotations"]["found"]  # noqa: E731
        self.assertEqual(found({}), "one,three,two")
        self.assertEqual(found({"namespace": "a"}), "one,two")
        self.assertEqual(found({"selector": "app=db"}), "one,three")
        self.assertEqual(found({"selector": {"app": "db", "tier": "3"}}), "three")
        self.assertEqual(found({"selector": "app in (db, web),tier notin (3)"}), "one,two")
        self.assertEqual(found({"selector": "!tier"}), "two")
        self.assertEqual(found({"selector": "tier>1"}), "three")
        self.assertEqual(found({"namespace": "b", "selector": "app!=db"}), "")

    def test_read_errors_carry_their_kind_and_the_read(self):
        with self.assertRaises(ReadInvalid) as caught:
            testing.mutate(Lister(), {}, {"selector": "app in (db"}, reads=[ReadFixture(Side.SERVICE, CONFIGMAPS, CMS)])
        self.assertEqual(caught.exception.kind, "invalid")
        self.assertIn("reads.list(service, v1/configmaps, label_selector='app in (db'): invalid: label selector", str(caught.exception))
        self.assertEqual(caught.exception.tag, "internal")  # uncaught, the host sees internal

        with self.assertRaises(ReadNotAllowed) as caught:
            testing.mutate(Undeclared(), {})
        self.assertIn("v1/namespaces on kcp is not declared in Undeclared.reads; add ReadDeclaration(Side.KCP, "
                      "Resource.core('v1', 'namespaces'), purpose)", str(caught.exception))

        for err in (ReadUnavailable("cache not synced"), ReadNotServed("no such resource")):
            with self.assertRaises(type(err)) as caught:
                testing.mutate(CopyLabels(), {"metadata": {"name": "w", "namespace": "shop"}},
                               read_errors={(Side.KCP, NAMESPACES): err})
            self.assertEqual(caught.exception.detail, err.detail)
            self.assertEqual(caught.exception.read, "reads.get(kcp, v1/namespaces, name='shop')")

    def test_a_plugin_can_catch_a_read_error(self):
        class Tolerant(Mutator):
            contract = "0.2"
            name = "tolerant"
            reads = [ReadDeclaration(Side.KCP, NAMESPACES, "x")]

            def mutate(self, ctx, cfg, obj, other):
                try:
                    reads.get(Side.KCP, NAMESPACES, name="x")
                except ReadUnavailable as err:
                    report.warning("ReadLater", err.kind)
                return obj

        out = testing.call(Tolerant(), {}, read_errors={(Side.KCP, NAMESPACES): ReadUnavailable("later")})
        self.assertEqual(out.report.warnings, [("ReadLater", "unavailable")])

    def test_fixtures_cannot_be_changed_by_the_plugin(self):
        class Scribbler(Mutator):
            contract = "0.2"
            name = "scribbler"
            reads = [ReadDeclaration(Side.KCP, NAMESPACES, "x")]

            def mutate(self, ctx, cfg, obj, other):
                reads.get(Side.KCP, NAMESPACES, name="shop").set_label("team", "changed")
                obj.set_label("team", reads.get(Side.KCP, NAMESPACES, name="shop").label("team"))

        out = testing.mutate(Scribbler(), {}, reads=[ReadFixture(Side.KCP, NAMESPACES, [NS])])
        self.assertEqual(out["metadata"]["labels"], {"team": "a"})
        self.assertEqual(NS["metadata"]["labels"]["team"], "a")

    def test_reads_outside_a_call_are_refused(self):
        with self.assertRaises(ContractError) as caught:
            reads.get(Side.KCP, NAMESPACES, name="x")
        self.assertIn("outside a plugin call", str(caught.exception))
        with self.assertRaises(TypeError):
            reads.get(Side.KCP, "v1/namespaces", name="x")


class ReportTest(unittest.TestCase):
    def test_report_of_a_call(self):
        out = testing.call(CopyLabels(), {"metadata": {"name": "w", "namespace": "shop"}},
                           reads=[ReadFixture(Side.KCP, NAMESPACES, [NS])])
        self.assertEqual(out.report.results, [CallResult(Severity.NORMAL, "LabelsCopied", "2 labels")])
        self.assertEqual(out.report.normals, [("LabelsCopied", "2 labels")])
        self.assertEqual(out.report.conditions, [Condition("LabelsCopied", "True", "Copied", "")])
        self.assertEqual(out.report.set_context, {"copied": ["env", "team"]})

        out = testing.call(CopyLabels(), {"metadata": {"name": "w", "namespace": "gone"}})
        self.assertEqual(out.report.condition("LabelsCopied"), Condition("LabelsCopied", "False", "NamespaceMissing", "nothing copied"))
        self.assertEqual(out.report.set_context, {})

    def test_report_fields_are_checked(self):
        def plugin(body):
            class P(Mutator):
                contract = "0.2"
                name = "p"

                def mutate(self, ctx, cfg, obj, other):
                    body(ctx)

            return P()

        cases = [
            (lambda ctx: report.warning("not camel", "m"), "reason 'not camel' is not a valid reason; use CamelCase"),
            (lambda ctx: report.normal("", "m"), "reason '' is not a valid reason"),
            (lambda ctx: report.condition("Not Ready", "True", "R"), "type 'Not Ready' is not a valid condition type"),
            (lambda ctx: report.condition("Ready", "True", "R", "m" * 40000), "message is 40000 bytes"),
            (lambda ctx: report.set_context("a key", 1), "key 'a key' is not a valid context key"),
            (lambda ctx: report.condition("Ready", "yes", "R"), "status 'yes' must be one of"),
            (lambda ctx: report.set_context("", 1), "key '' is not a valid context key"),
            (lambda ctx: report.set_context("k", {1, 2}), "context value 'k' is not JSON"),
            (lambda ctx: report.set_context("tenant", "again"), "context key 'tenant' was set by an earlier step"),
        ]
        for body, needle in cases:
            with self.assertRaises(Internal, msg=needle) as caught:
                testing.mutate(plugin(body), {}, ctx_values={"tenant": "t"})
            self.assertIn(needle, str(caught.exception))

    def test_host_rules_that_are_not_camel_case_only(self):
        class Lenient(Mutator):
            contract = "0.2"
            name = "lenient"

            def mutate(self, ctx, cfg, obj, other):
                report.warning("subnet_missing:v2", "Kubernetes accepts this reason")
                report.condition("example.com/Ready", "True", "Ok")
                report.set_context("example.com/subnet", "s1")

        out = testing.call(Lenient(), {})
        self.assertEqual(out.report.conditions[0].type, "example.com/Ready")

    def test_the_harness_applies_the_hosts_bounds(self):
        def plugin(body):
            class P(Mutator):
                contract = "0.2"
                name = "p"

                def mutate(self, ctx, cfg, obj, other):
                    body()

            return P()

        def many_warnings():
            for i in range(33):
                report.warning("W", str(i))

        def big():
            report.set_context("k", "x" * 70000)

        for body, needle in [(many_warnings, "report.results has 33 entries, over the host's limit of 32"),
                             (big, "over the host's limit of 65536 bytes")]:
            with self.assertRaises(AssertionError) as caught:
                testing.call(plugin(body), {})
            self.assertIn(f"the host rejects this report: ", str(caught.exception))
            self.assertIn(needle, str(caught.exception))

    def test_a_condition_type_is_reported_once(self):
        class Twice(Mutator):
            contract = "0.2"
            name = "twice"

            def mutate(self, ctx, cfg, obj, other):
                report.condition("Ready", "Unknown", "Checking")
                report.condition("Ready", True, "Checked", "ok")

        out = testing.call(Twice(), {})
        self.assertEqual(out.report.conditions, [Condition("Ready", "True", "Checked", "ok")])

    def test_report_fields_for_the_component(self):
        out = testing.call(CopyLabels(), {"metadata": {"name": "w", "namespace": "gone"}}, ctx_values={"tenant": "t"})
        out.report.set_context["k"] = {"a": [1]}
        self.assertEqual(
            adapter.report_fields(out.report),
            {
                "results": [("warning", "NamespaceMissing", "namespace gone not found")],
                "conditions": [("LabelsCopied", "False", "NamespaceMissing", "nothing copied")],
                "set_context": [("k", '{"a":[1]}')],
            },
        )


class ContextValuesTest(unittest.TestCase):
    def test_values_reach_the_plugin_through_json(self):
        out = testing.mutate(CopyLabels(), {"metadata": {"name": "w", "namespace": "gone"}}, ctx_values={"tenant": "t9"})
        self.assertEqual(out["metadata"]["labels"], {"tenant": "t9"})
        with self.assertRaises(Internal):
            testing.mutate(CopyLabels(), {"metadata": {"name": "w", "namespace": "gone"}}, ctx_values={"tenant": {1}})

    def test_context_values_from_the_host(self):
        self.assertEqual(adapter.context_values([("a", '{"b":1}'), ("c", '"d"')]), {"a": {"b": 1}, "c": "d"})
        with self.assertRaises(InvalidInput) as caught:
            adapter.context_values([("a", "{")])
        self.assertIn("context value 'a' is not valid JSON", str(caught.exception))
        ctx = Context.fixture(values={"x": 1})
        self.assertEqual(ctx.values, {"x": 1})
        hash(ctx)  # still hashable, as 0.1 contexts were


class DescribeAndExamplesTest(unittest.TestCase):
    def test_describe_02_has_reads_fixtures_and_values(self):
        info = adapter.describe(CopyLabels())
        self.assertEqual(
            info["reads"],
            [
                {"side": "kcp", "resource": {"group": "", "version": "v1", "resource": "namespaces"}, "purpose": "copies the Namespace's labels"},
                {"side": "service", "resource": {"group": "", "version": "v1", "resource": "configmaps"}, "purpose": "counts the tenant's config maps"},
            ],
        )
        example = info["examples"][0]
        self.assertEqual(example["config"], "null")
        self.assertEqual(example["values"], [("tenant", '"t1"')])
        self.assertEqual(example["reads"][0]["side"], "kcp")
        self.assertEqual(example["reads"][0]["objects"], ['{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"team":"a","env":"prod"}}}'])

    def test_describe_01_is_unchanged(self):
        info = adapter.describe(OldStyle())
        self.assertNotIn("reads", info)
        self.assertEqual(set(info), {"name", "version", "description", "config_schema", "examples"})

    def test_examples_run_with_their_fixtures_and_values(self):
        self.assertEqual(testing.check_examples(CopyLabels()), 1)

        class Wrong(CopyLabels):
            examples = [Example("no tenant", None, {"metadata": {"name": "w", "namespace": "shop"}},
                                {"metadata": {"name": "w", "namespace": "shop", "labels": {"team": "a", "env": "prod"}}},
                                reads=[ReadFixture(Side.KCP, NAMESPACES, [NS])], values={"tenant": "t1"})]

        with self.assertRaises(AssertionError) as caught:
            testing.check_examples(Wrong())
        self.assertIn('"tenant": "t1"', str(caught.exception))


class OtherRolesTest(unittest.TestCase):
    def test_namer_and_renderer_read_and_report(self):
        class FromConfigMap(Namer):
            contract = "0.2"
            name = "from-cm"
            reads = [ReadDeclaration(Side.SERVICE, CONFIGMAPS, "the name map")]

            def name_object(self, ctx, cfg, obj):
                cm = reads.get(Side.SERVICE, CONFIGMAPS, name="names", namespace="sys")
                report.normal("Named", "from the map")
                return ObjectName(cm["data"][obj.name], "tenant")

        out = testing.call(FromConfigMap(), {"metadata": {"name": "a"}},
                           reads=[ReadFixture(Side.SERVICE, CONFIGMAPS, [{"metadata": {"name": "names", "namespace": "sys"}, "data": {"a": "z"}}])])
        self.assertEqual(out.output, ObjectName("z", "tenant"))
        self.assertEqual(out.report.normals, [("Named", "from the map")])

        class Teams(Renderer):
            contract = "0.2"
            name = "teams"
            reads = [ReadDeclaration(Side.KCP, NAMESPACES, "one object per namespace")]

            def render(self, ctx, cfg, template, values):
                report.set_context("count", 1)
                return [{"kind": "Team", "metadata": {"name": ns.name}} for ns in reads.list(Side.KCP, NAMESPACES)]

        out = testing.call(Teams(), {}, reads=[ReadFixture(Side.KCP, NAMESPACES, [NS])])
        self.assertEqual(out.output, [{"kind": "Team", "metadata": {"name": "shop"}}])
        self.assertEqual(out.report.set_context, {"count": 1})

    def test_a_projector_cannot_report(self):
        class Reporting(Projector):
            contract = "0.2"
            name = "reporting"

            def project(self, cfg, crd):
                report.warning("X", "y")
                return crd

        with self.assertRaises(Internal) as caught:
            testing.project(Reporting(), {})
        self.assertIn("a Projector cannot report", str(caught.exception))


class SelectorTest(unittest.TestCase):
    def test_parse_errors_name_the_requirement(self):
        for bad, needle in [
            ("a in ()", "needs at least one value"),
            ("a=b,,c", "empty requirement"),
            ("a in (b", "unbalanced '('"),
            ("-a=b", "not a valid label key"),
            ("a=b c", "is not one of"),
        ]:
            with self.assertRaises(selector.SelectorError, msg=bad) as caught:
                selector.parse(bad)
            self.assertIn(needle, str(caught.exception))

    def test_matching(self):
        labels = {"app": "db", "n": "5", "example.com/x": ""}
        for sel, want in [
            ("", True), ("app", True), ("!app", False), ("app==db", True), ("app!=db", False),
            ("missing!=x", True), ("app notin (web)", True), ("n>4", True), ("n<5", False),
            ("example.com/x=", True), ("app=db,n>9", False),
        ]:
            self.assertEqual(selector.matches(sel, labels), want, sel)


if __name__ == "__main__":
    unittest.main()
