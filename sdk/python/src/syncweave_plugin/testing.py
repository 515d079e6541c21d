"""A local test harness: call a plugin in-process, through the same JSON-text adapters
its component exports use, and check its worked examples.

    import unittest
    from syncweave_plugin import testing
    from plugin import PLUGIN

    class PluginTest(unittest.TestCase):
        def test_examples(self):
            self.assertEqual(testing.check_examples(PLUGIN), 1)

        def test_sets_label(self):
            out = testing.mutate(PLUGIN, {"metadata": {"name": "a"}}, config={"team": "x"})
            self.assertEqual(out["metadata"]["labels"], {"team": "x"})

Contract 0.2 plugins get read fixtures and context values, and their report comes back
from :func:`call`::

    NAMESPACES = Resource.core("v1", "namespaces")

    def test_copies_namespace_labels(self):
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1", "labels": {"team": "a"}}}
        out = testing.call(PLUGIN, {"metadata": {"name": "x", "namespace": "ns1"}},
                           reads=[ReadFixture(Side.KCP, NAMESPACES, [ns])], ctx_values={"tenant": "t1"})
        self.assertEqual(out.output["metadata"]["labels"], {"team": "a"})
        self.assertEqual(out.report.warnings, [])
        self.assertEqual(out.report.set_context, {"copied": 1})

A read of a declared resource without a fixture sees no objects; a read the plugin does
not declare fails with :class:`~syncweave_plugin.errors.ReadNotAllowed`, as on the host;
``read_errors={(side, resource): ReadUnavailable("...")}`` makes reads of a resource fail.

Calls run in :meth:`Context.fixture` unless ``ctx`` is given. ``config`` is a JSON value
(``None`` = no config, as the host passes it); ``config_text`` passes raw text instead
(to test what the plugin says about malformed JSON). Failures raise the plugin's
:class:`~syncweave_plugin.errors.PluginError`, as the host would classify them.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import adapter, contract
from . import report as _report
from . import selector as _selector
from .errors import PluginError, ReadError, ReadInvalid, ReadNotAllowed
from .patch import json_equal
from .plugin import Mutator, Namer, Plugin, Projector, Renderer
from .types import Context, ObjectName, ReadFixture, Report, Resource, Side

ReadErrors = Mapping[Tuple[Side, Resource], ReadError]


@dataclass
class Outcome:
    """What :func:`call` returns: the role's output (the object, :class:`ObjectName`,
    the CRD or the list of objects) and the call's :class:`Report`."""

    output: Any
    report: Report


class FixtureReads:
    """Answers reads from read fixtures, as the host would from its caches: only
    declared resources, get by namespace and name, list by namespace and label
    selector. Objects are copied through JSON, so a plugin cannot change a fixture."""

    def __init__(self, plugin: Plugin, fixtures: Sequence[ReadFixture] = (), errors: Optional[ReadErrors] = None) -> None:
        self._plugin = plugin
        self._declared = {(d.side, d.resource) for d in (getattr(plugin, "reads", ()) or ())}
        self._objects: Dict[Tuple[Side, Resource], List[str]] = {}
        for i, fixture in enumerate(fixtures):
            if not isinstance(fixture, ReadFixture):
                raise TypeError(f"reads[{i}] must be a ReadFixture(side, resource, objects), not {fixture!r}")
            texts = [adapter.to_json(o, f"read fixture object for {fixture.resource}") for o in fixture.objects]
            self._objects.setdefault((fixture.side, fixture.resource), []).extend(texts)
        self._errors = dict(errors or {})
        for key, err in self._errors.items():
            if not isinstance(err, ReadError):
                raise TypeError(f"read_errors[{key!r}] must be a ReadError (e.g. ReadUnavailable(\"...\")), not {err!r}")

    def _check(self, side: Side, resource: Resource) -> List[str]:
        if (side, resource) not in self._declared:
            name = type(self._plugin).__name__
            raise ReadNotAllowed(
                f"{resource} on {side.value} is not declared in {name}.reads; add "
                f"ReadDeclaration(Side.{side.name}, {contract._resource_repr(resource)}, purpose) to it"
            )
        err = self._errors.get((side, resource))
        if err is not None:
            raise err
        return self._objects.get((side, resource), [])

    @staticmethod
    def _meta(text: str) -> dict:
        md = json.loads(text).get("metadata")
        return md if isinstance(md, dict) else {}

    def get(self, side: Side, resource: Resource, namespace: Optional[str], name: str) -> Optional[str]:
        for text in self._check(side, resource):
            md = self._meta(text)
            if md.get("name") == name and md.get("namespace") == namespace:
                return text
        return None

    def list(self, side: Side, resource: Resource, namespace: Optional[str], label_selector: Optional[str]) -> List[str]:
        objects = self._check(side, resource)
        try:
            requirements = _selector.parse(label_selector)
        except _selector.SelectorError as err:
            raise ReadInvalid(str(err)) from None
        out = []
        for text in objects:
            md = self._meta(text)
            if namespace is not None and md.get("namespace") != namespace:
                continue
            labels = md.get("labels") if isinstance(md.get("labels"), dict) else {}
            if _selector.matches(requirements, labels):
                out.append(text)
        return out


def _config_text(config: Any, config_text: Optional[str]) -> str:
    if config_text is not None:
        return config_text
    return adapter.to_json(config, "config")


def _text(value: Any, text: Optional[str], what: str) -> str:
    return text if text is not None else adapter.to_json(value, what)


def _context(ctx: Optional[Context], ctx_values: Optional[Mapping[str, Any]]) -> Context:
    """The call's context; context values go through JSON text, as the host passes them."""
    ctx = ctx or Context.fixture()
    if ctx_values is None:
        ctx_values = ctx.values
    entries = [(k, adapter.to_json(v, f"context value {k!r}")) for k, v in dict(ctx_values).items()]
    return dataclasses.replace(ctx, values=adapter.context_values(entries))


def _reads(plugin: Plugin, reads: Sequence[ReadFixture], read_errors: Optional[ReadErrors]) -> Optional[FixtureReads]:
    if contract.of(plugin) == "0.1":
        if reads or read_errors:
            raise contract.needs_02(plugin, "read fixtures")
        return None
    return FixtureReads(plugin, reads, read_errors)


def validate_config(plugin: Plugin, config: Any = None, *, config_text: Optional[str] = None) -> None:
    """Runs the plugin's ``validate-config``; raises InvalidConfig when it refuses."""
    adapter.validate_config(plugin, _config_text(config, config_text))


def _identity(obj: Any) -> dict:
    if not isinstance(obj, dict):
        return {}
    md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata.name": md.get("name"),
        "metadata.namespace": md.get("namespace"),
    }


def _bounded(report: Report) -> Report:
    """The host fails a call whose report is over its bounds; so does the harness."""
    try:
        _report.check_bounds(report)
    except ValueError as err:
        raise AssertionError(f"the host rejects this report: {err}") from None
    return report


def _mutate(plugin, obj, config, other, ctx, config_text, object_text, reads, read_errors, ctx_values) -> Outcome:
    text = _text(obj, object_text, "object")
    out_text, report = adapter.mutate(
        plugin,
        _context(ctx, ctx_values),
        _config_text(config, config_text),
        text,
        None if other is None else adapter.to_json(other, "other object"),
        _reads(plugin, reads, read_errors),
    )
    out = json.loads(out_text)
    try:
        before = _identity(json.loads(text))
    except json.JSONDecodeError:
        before = {}
    after = _identity(out)
    for field, was in before.items():
        if after.get(field) != was:
            raise AssertionError(
                f"the mutator changed {field} from {was!r} to {after.get(field)!r}; the host rejects "
                "this (mutators may not change apiVersion, kind, metadata.name or metadata.namespace)"
            )
    return Outcome(out, _bounded(report))


def mutate(
    plugin: Mutator,
    obj: Any = None,
    config: Any = None,
    *,
    other: Any = None,
    ctx: Optional[Context] = None,
    config_text: Optional[str] = None,
    object_text: Optional[str] = None,
    reads: Sequence[ReadFixture] = (),
    read_errors: Optional[ReadErrors] = None,
    ctx_values: Optional[Mapping[str, Any]] = None,
) -> dict:
    """Calls ``mutate`` and returns the new object. Like the host, fails when the
    mutator changed apiVersion, kind, metadata.name or metadata.namespace. ``reads``,
    ``read_errors`` and ``ctx_values`` are for contract 0.2 plugins; :func:`call`
    returns the report too."""
    return _mutate(plugin, obj, config, other, ctx, config_text, object_text, reads, read_errors, ctx_values).output


def _name(plugin, obj, config, ctx, config_text, object_text, reads, read_errors, ctx_values) -> Outcome:
    n, report = adapter.name(
        plugin,
        _context(ctx, ctx_values),
        _config_text(config, config_text),
        _text(obj, object_text, "object"),
        _reads(plugin, reads, read_errors),
    )
    return Outcome(n, _bounded(report))


def name(
    plugin: Namer,
    obj: Any = None,
    config: Any = None,
    *,
    ctx: Optional[Context] = None,
    config_text: Optional[str] = None,
    object_text: Optional[str] = None,
    reads: Sequence[ReadFixture] = (),
    read_errors: Optional[ReadErrors] = None,
    ctx_values: Optional[Mapping[str, Any]] = None,
) -> ObjectName:
    """Calls the namer's ``name`` and returns the :class:`ObjectName`."""
    return _name(plugin, obj, config, ctx, config_text, object_text, reads, read_errors, ctx_values).output


def project(plugin: Projector, crd: Any = None, config: Any = None, *, config_text: Optional[str] = None) -> dict:
    """Calls ``project`` and returns the projected CRD."""
    text, _ = adapter.project(plugin, _config_text(config, config_text), adapter.to_json(crd, "CRD"))
    return json.loads(text)


def _render(plugin, values, config, template, ctx, config_text, reads, read_errors, ctx_values) -> Outcome:
    docs, report = adapter.render(
        plugin,
        _context(ctx, ctx_values),
        _config_text(config, config_text),
        template,
        adapter.to_json(values, "values"),
        _reads(plugin, reads, read_errors),
    )
    return Outcome([json.loads(d) for d in docs], _bounded(report))


def render(
    plugin: Renderer,
    values: Any = None,
    config: Any = None,
    *,
    template: str = "",
    ctx: Optional[Context] = None,
    config_text: Optional[str] = None,
    reads: Sequence[ReadFixture] = (),
    read_errors: Optional[ReadErrors] = None,
    ctx_values: Optional[Mapping[str, Any]] = None,
) -> List[Any]:
    """Calls ``render`` and returns the rendered objects. (``values`` are the
    template's values; context values from earlier steps are ``ctx_values``.)"""
    return _render(plugin, values, config, template, ctx, config_text, reads, read_errors, ctx_values).output


def call(
    plugin: Plugin,
    input: Any = None,  # noqa: A002
    config: Any = None,
    *,
    other: Any = None,
    template: str = "",
    ctx: Optional[Context] = None,
    config_text: Optional[str] = None,
    reads: Sequence[ReadFixture] = (),
    read_errors: Optional[ReadErrors] = None,
    ctx_values: Optional[Mapping[str, Any]] = None,
) -> Outcome:
    """Calls the plugin's role method with ``input`` (the object, the CRD or the
    template's values) and returns its output and its report, for assertions on
    ``report.warnings``, ``report.conditions`` and ``report.set_context``."""
    if isinstance(plugin, Mutator):
        return _mutate(plugin, input, config, other, ctx, config_text, None, reads, read_errors, ctx_values)
    if isinstance(plugin, Namer):
        return _name(plugin, input, config, ctx, config_text, None, reads, read_errors, ctx_values)
    if isinstance(plugin, Projector):
        if reads or read_errors or ctx_values:
            raise contract.ContractError(f"{type(plugin).__name__} is a Projector: it has no reads and no context values")
        return Outcome(project(plugin, input, config, config_text=config_text), Report())
    if isinstance(plugin, Renderer):
        return _render(plugin, input, config, template, ctx, config_text, reads, read_errors, ctx_values)
    raise TypeError(f"{plugin!r} is not a Mutator, Namer, Projector or Renderer")


def run_example(plugin: Plugin, example: Any) -> Any:
    """The output of one example, run as ``syncweave plugin test --examples`` runs it
    (renderers get an empty template: their examples carry the template in the config;
    contract 0.2 examples see their read fixtures and context values)."""
    contract.check(plugin)  # a plugin that does not fit its contract is not an example failure
    config = adapter.to_json(example.config, "config")
    validate_config(plugin, config_text=config)
    reads = tuple(getattr(example, "reads", ()) or ())
    values = dict(getattr(example, "values", None) or {})
    out = call(plugin, example.input, config_text=config, reads=reads, ctx_values=values or None)
    return out.output.to_json() if isinstance(out.output, ObjectName) else out.output


def check_examples(plugin: Plugin) -> int:
    """Runs every example of ``plugin.examples`` and compares its output with the
    expected one (as JSON: key order does not matter). Returns how many ran; raises
    AssertionError naming the first example that fails, and why."""
    if not plugin.examples:
        raise AssertionError(f"{plugin.name or type(plugin).__name__} publishes no examples")
    for example in plugin.examples:
        try:
            got = run_example(plugin, example)
        except PluginError as err:
            raise AssertionError(f"example {example.name!r} failed: {err.tag}: {err.message}") from None
        if example.expected is not None and not json_equal(got, example.expected):
            raise AssertionError(
                f"example {example.name!r}:\n  expected {json.dumps(example.expected, sort_keys=True)}\n"
                f"  got      {json.dumps(got, sort_keys=True)}"
            )
    return len(plugin.examples)
