"""The component glue (syncweave_plugin.component) against the bindings componentize-py
generates for each contract version: what the host sends and gets back, and the build-time
check that the plugin's contract is the world's. Skipped when componentize-py is not
installed (`python3 -m pip install componentize-py==0.25.1`)."""

import importlib
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

from syncweave_plugin import (
    ContractError,
    Example,
    Mutator,
    Namer,
    ObjectName,
    Projector,
    ReadDeclaration,
    ReadFixture,
    Renderer,
    Resource,
    Side,
    log,
    reads,
    report,
)
from syncweave_plugin.contract import WIT_PACKAGES

REPO = pathlib.Path(__file__).resolve().parents[3]
WIT = {"0.1": REPO / "wit" / "plugin.wit", "0.2": REPO / "wit" / "v0.2" / "plugin.wit"}
NAMESPACES = Resource.core("v1", "namespaces")
NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "a"}}}


class CopyLabels(Mutator):
    contract = "0.2"
    name = "copy-labels"
    reads = [ReadDeclaration(Side.KCP, NAMESPACES, "copies labels")]
    examples = [Example("e", None, {"metadata": {"name": "w", "namespace": "shop"}}, None,
                        reads=[ReadFixture(Side.KCP, NAMESPACES, [NS])], values={"tenant": "t1"})]

    def mutate(self, ctx, cfg, obj, other):
        ns = reads.get(Side.KCP, NAMESPACES, name=obj.namespace)
        if ns is None:
            report.warning("NamespaceMissing", obj.namespace)
            return obj
        for k, v in ns.labels.items():
            obj.set_label(k, v)
        obj.set_label("tenant", ctx.values.get("tenant", "-"))
        report.condition("Copied", True, "Done")
        report.set_context("copied", len(ns.labels))
        return obj


class Label01(Mutator):
    name = "label"

    def mutate(self, ctx, cfg, obj, other):
        obj.set_label("k", "v")
        log.info("labelled")


class ListNamer(Namer):
    contract = "0.2"
    name = "list-namer"
    reads = [ReadDeclaration(Side.KCP, NAMESPACES, "counts")]

    def name_object(self, ctx, cfg, obj):
        n = len(reads.list(Side.KCP, NAMESPACES, label_selector={"team": "a"}))
        report.normal("Counted", str(n))
        return ObjectName(f"{obj.name}-{n}", None)


class Docs(Renderer):
    contract = "0.2"
    name = "docs"

    def render(self, ctx, cfg, template, values):
        report.set_context("rendered", True)
        return [{"kind": "ConfigMap", "metadata": {"name": values["name"]}}]


class Same(Projector):
    contract = "0.2"
    name = "same"

    def project(self, cfg, crd):
        return crd


@unittest.skipUnless(shutil.which("componentize-py"), "componentize-py is not installed")
class ComponentTest(unittest.TestCase):
    bindings: dict = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        for version, wit in WIT.items():
            for world in ("mutator", "namer", "projector", "renderer"):
                out = pathlib.Path(cls.tmp.name) / f"{version}-{world}"
                subprocess.run(
                    ["componentize-py", "-d", str(wit), "-w", world, "bindings", str(out)],
                    check=True, capture_output=True,
                )
                cls.bindings[(version, world)] = out

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        cls._unload()
        log.install_sink(None)

    @staticmethod
    def _unload():
        for name in list(sys.modules):
            if name.split(".")[0] in ("wit_world", "componentize_py_types", "componentize_py_async_support", "poll_loop"):
                del sys.modules[name]
        sys.path[:] = [p for p in sys.path if not p.startswith(ComponentTest.tmp.name)]

    def world(self, version, world):
        """Imports the generated bindings of that world as the component would see them."""
        self._unload()
        sys.path.insert(0, str(self.bindings[(version, world)]))
        importlib.invalidate_caches()
        from syncweave_plugin import component

        return component, importlib.import_module("wit_world.imports.types")

    def ctx(self, types, values=()):
        return types.Context(
            cluster_name="c1", cluster_path=None, direction=types.Direction.KCP_TO_SERVICE, owner="pr",
            values=[types.ContextEntry(key=k, value=v) for k, v in values],
        )

    def test_the_world_version_shows_in_the_bindings(self):
        component, types = self.world("0.1", "mutator")
        self.assertEqual(component.world_contract(types), "0.1")
        component, types = self.world("0.2", "projector")
        self.assertEqual(component.world_contract(types), "0.2")

    def test_a_contract_mismatch_stops_the_build(self):
        component, _ = self.world("0.1", "mutator")
        with self.assertRaises(ContractError) as caught:
            component.exports(CopyLabels())
        msg = str(caught.exception)
        self.assertIn(f"CopyLabels targets contract 0.2 (its contract attribute) but this component is being built against {WIT_PACKAGES['0.1']}", msg)
        self.assertIn('set contract = "0.2" under [tool.syncweave] in pyproject.toml', msg)
        component, _ = self.world("0.2", "mutator")
        with self.assertRaises(ContractError) as caught:
            component.exports(Label01())
        self.assertIn('set contract = "0.2" on class Label01', str(caught.exception))

    def test_01_mutator_is_unchanged(self):
        component, types = self.world("0.1", "mutator")
        lines = []
        Meta, Mutation = component.exports(Label01())
        host_log = importlib.import_module("wit_world.imports.host_log")
        host_log.log = lambda level, message: lines.append((level, message))
        out = Mutation().mutate(types.Context(cluster_name="c", cluster_path=None, direction=types.Direction.KCP_TO_SERVICE, owner="o"),
                                "null", '{"metadata":{"name":"a"}}', None)
        self.assertEqual(out, '{"metadata":{"name":"a","labels":{"k":"v"}}}')
        self.assertEqual(lines, [(host_log.Level.INFO, "labelled")])
        info = Meta().describe()
        self.assertFalse(hasattr(info, "reads"))

    def test_02_mutator_reads_reports_and_sees_values(self):
        component, types = self.world("0.2", "mutator")
        wit_reads = importlib.import_module("wit_world.imports.reads")
        from componentize_py_types import Err

        calls = []

        def get(side, resource, namespace, name):
            calls.append((side, resource, namespace, name))
            if name == "down":
                raise Err(wit_reads.ReadError_Unavailable("cache not synced"))
            return '{"metadata":{"name":"shop","labels":{"team":"a"}}}' if name == "shop" else None

        wit_reads.get = get
        Meta, Mutation = component.exports(CopyLabels())
        out = Mutation().mutate(self.ctx(types, [("tenant", '"t1"')]), "null", '{"metadata":{"name":"w","namespace":"shop"}}', None)
        self.assertEqual(calls, [(types.Side.KCP, types.Resource(group="", version="v1", resource="namespaces"), None, "shop")])
        self.assertEqual(out.object, '{"metadata":{"name":"w","namespace":"shop","labels":{"team":"a","tenant":"t1"}}}')
        self.assertEqual(out.report.results, [])
        self.assertEqual(out.report.conditions, [types.Condition(type="Copied", status="True", reason="Done", message="")])
        self.assertEqual(out.report.set_context, [types.ContextEntry(key="copied", value="1")])

        out = Mutation().mutate(self.ctx(types), "null", '{"metadata":{"name":"w","namespace":"gone"}}', None)
        self.assertEqual(out.report.results, [types.CallResult(severity=types.Severity.WARNING, reason="NamespaceMissing", message="gone")])

        with self.assertRaises(Err) as caught:
            Mutation().mutate(self.ctx(types), "null", '{"metadata":{"name":"w","namespace":"down"}}', None)
        self.assertEqual(caught.exception.value, types.PluginError_Internal(
            "reads.get(kcp, v1/namespaces, name='down'): unavailable: cache not synced"))

        with self.assertRaises(Err) as caught:
            Mutation().mutate(self.ctx(types, [("tenant", "{")]), "null", "{}", None)
        self.assertIsInstance(caught.exception.value, types.PluginError_InvalidInput)

        info = Meta().describe()
        self.assertEqual(info.reads, [types.ReadDeclaration(side=types.Side.KCP, resource=types.Resource(group="", version="v1", resource="namespaces"), purpose="copies labels")])
        fixture = info.examples[0]
        self.assertEqual(fixture.values, [types.ContextEntry(key="tenant", value='"t1"')])
        self.assertEqual(fixture.reads[0].side, types.Side.KCP)
        self.assertEqual(fixture.reads[0].objects, ['{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"team":"a"}}}'])

    def test_02_namer_renderer_projector(self):
        component, types = self.world("0.2", "namer")
        wit_reads = importlib.import_module("wit_world.imports.reads")
        wit_reads.list = lambda side, resource, namespace, selector: ["{}", "{}"] if selector == "team=a" else []
        _, Naming = component.exports(ListNamer())
        named = Naming().name(self.ctx(types), "null", '{"metadata":{"name":"x"}}')
        naming = importlib.import_module("wit_world.exports.naming")
        self.assertEqual(named.name, naming.ObjectName(name="x-2", namespace=None))
        self.assertEqual(named.report.results, [types.CallResult(severity=types.Severity.NORMAL, reason="Counted", message="2")])

        component, types = self.world("0.2", "renderer")
        _, Rendering = component.exports(Docs())
        rendered = Rendering().render(self.ctx(types), "null", "", '{"name":"n"}')
        self.assertEqual(rendered.documents, ['{"kind":"ConfigMap","metadata":{"name":"n"}}'])
        self.assertEqual(rendered.report.set_context, [types.ContextEntry(key="rendered", value="true")])

        component, types = self.world("0.2", "projector")
        Meta, Projection = component.exports(Same())
        self.assertEqual(Projection().project("null", '{"a":1}'), '{"a":1}')
        self.assertEqual(Meta().describe().reads, [])


if __name__ == "__main__":
    unittest.main()
