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

Calls run in :meth:`Context.fixture` unless ``ctx`` is given. ``config`` is a JSON value
(``None`` = no config, as the host passes it); ``config_text`` passes raw text instead
(to test what the plugin says about malformed JSON). Failures raise the plugin's
:class:`~syncweave_plugin.errors.PluginError`, as the host would classify them.
"""

from __future__ import annotations

import json
from typing import Any, List, Optional

from . import adapter
from .errors import PluginError
from .patch import json_equal
from .plugin import Mutator, Namer, Plugin, Projector, Renderer
from .types import Context, ObjectName



def _config_text(config: Any, config_text: Optional[str]) -> str:
    if config_text is not None:
        return config_text
    return adapter.to_json(config, "config")


def _text(value: Any, text: Optional[str], what: str) -> str:
    return text if text is not None else adapter.to_json(value, what)


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


def mutate(
    plugin: Mutator,
    obj: Any = None,
    config: Any = None,
    *,
    other: Any = None,
    ctx: Optional[Context] = None,
    config_text: Optional[str] = None,
    object_text: Optional[str] = None,
) -> dict:
    """Calls ``mutate`` and returns the new object. Like the host, fails when the
    mutator changed apiVersion, kind, metadata.name or metadata.namespace."""
    text = _text(obj, object_text, "object")
    out = json.loads(
        adapter.mutate(
            plugin,
            ctx or Context.fixture(),
            _config_text(config, config_text),
            text,
            None if other is None else adapter.to_json(other, "other object"),
        )
    )
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
    return out


def name(
    plugin: Namer,
    obj: Any = None,
    config: Any = None,
    *,
    ctx: Optional[Context] = None,
    config_text: Optional[str] = None,
    object_text: Optional[str] = None,
) -> ObjectName:
    """Calls the namer's ``name`` and returns the :class:`ObjectName`."""
    return adapter.name(plugin, ctx or Context.fixture(), _config_text(config, config_text), _text(obj, object_text, "object"))


def project(plugin: Projector, crd: Any = None, config: Any = None, *, config_text: Optional[str] = None) -> dict:
    """Calls ``project`` and returns the projected CRD."""
    return json.loads(adapter.project(plugin, _config_text(config, config_text), adapter.to_json(crd, "CRD")))


def render(
    plugin: Renderer,
    values: Any = None,
    config: Any = None,
    *,
    template: str = "",
    ctx: Optional[Context] = None,
    config_text: Optional[str] = None,
) -> List[Any]:
    """Calls ``render`` and returns the rendered objects."""
    docs = adapter.render(plugin, ctx or Context.fixture(), _config_text(config, config_text), template, adapter.to_json(values, "values"))
    return [json.loads(d) for d in docs]


def run_example(plugin: Plugin, example: Any) -> Any:
    """The output of one example, run as ``syncweave plugin test --examples`` runs it
    (renderers get an empty template: their examples carry the template in the config)."""
    ctx = Context.fixture()
    config = adapter.to_json(example.config, "config")
    validate_config(plugin, config_text=config)
    if isinstance(plugin, Mutator):
        return mutate(plugin, example.input, config_text=config, ctx=ctx)
    if isinstance(plugin, Namer):
        return name(plugin, example.input, config_text=config, ctx=ctx).to_json()
    if isinstance(plugin, Projector):
        return project(plugin, example.input, config_text=config)
    if isinstance(plugin, Renderer):
        return render(plugin, example.input, config_text=config, ctx=ctx)
    raise TypeError(f"{plugin!r} is not a Mutator, Namer, Projector or Renderer")


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
