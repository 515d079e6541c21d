"""The four plugin roles. Subclass one, set the metadata attributes and implement its
method; :mod:`syncweave_plugin.component` turns an instance into the component's
exports and :mod:`syncweave_plugin.testing` calls it locally.

    class TeamLabel(Mutator):
        name = "team-label"
        version = "0.1.0"
        description = "Labels every object with its team"
        examples = [Example("labels", {"team": "a"}, {"metadata": {"name": "x"}},
                            {"metadata": {"name": "x", "labels": {"team": "a"}}})]

        def parse_config(self, config):
            fields(config, "config", required=["team"])
            return string(config["team"], "team", allow_empty=False)

        def mutate(self, ctx, team, obj, other):
            obj.set_label("team", team)
            return obj

Contract 0.2 (``wit/v0.2/plugin.wit``) is opt-in: set ``contract = "0.2"`` on the class
(and under ``[tool.syncweave]`` in ``pyproject.toml``). The plugin may then declare
``reads`` and read other objects with :mod:`~syncweave_plugin.reads`, report Events,
conditions and context values with :mod:`~syncweave_plugin.report`, and read the values
earlier chain steps set in ``ctx.values``::

    class NamespaceLabels(Mutator):
        contract = "0.2"
        reads = [ReadDeclaration(Side.KCP, Resource.core("v1", "namespaces"),
                                 "copies the labels of the object's Namespace")]

        def mutate(self, ctx, cfg, obj, other):
            ns = reads.get(Side.KCP, Resource.core("v1", "namespaces"), name=obj.namespace)
            if ns is None:
                report.warning("NamespaceMissing", f"namespace {obj.namespace} not found")
                return obj
            for k, v in ns.labels.items():
                obj.set_label(k, v)
            return obj

Configs: the host passes the config as JSON text; the SDK parses it (an absent or empty
config is ``None``) and hands it to :meth:`Plugin.parse_config`, whose result is what the
role method receives as ``config``. ``validate_config`` (the contract's
``validate-config``) calls ``parse_config`` too, so one function checks a config
everywhere. Raise :class:`~syncweave_plugin.errors.InvalidConfig` naming the field.
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, List, Optional, Sequence, Union

from .objects import Object
from .types import Context, Example, ObjectName, ReadDeclaration


class Plugin:
    """What every role shares: metadata for ``describe()`` and config handling."""

    world: ClassVar[str] = ""
    contract: ClassVar[str] = "0.1"
    """The plugin contract version the plugin targets: ``"0.1"`` (the default) or
    ``"0.2"``. Its project's ``[tool.syncweave] contract`` must say the same, so that
    ``syncweave plugin build`` builds against that world."""
    name: str = ""
    """The plugin's name in ``describe()`` (the host shows it in errors)."""
    version: str = "0.1.0"
    description: str = ""
    config_schema: Optional[Dict[str, Any]] = None
    """JSON Schema of the config, published in ``describe()``."""
    examples: Sequence[Example] = ()
    """Worked examples: run by ``syncweave plugin test --examples``, the host's
    self-test and :func:`syncweave_plugin.testing.check_examples`."""
    reads: Sequence[ReadDeclaration] = ()
    """Contract 0.2: every kind of object the plugin may read, published by
    ``describe()``. The host refuses reads that are not declared here."""

    def parse_config(self, config: Any) -> Any:
        """Checks the parsed config JSON (``None`` when absent) and returns what the
        role method receives. Default: the config as it is."""
        return config

    def validate_config(self, config: Any) -> None:
        """The contract's ``validate-config``; default: :meth:`parse_config`."""
        self.parse_config(config)


class Mutator(Plugin):
    """Rewrites one object on its way between kcp and the service cluster."""

    world = "mutator"

    def mutate(self, ctx: Context, config: Any, obj: Object, other: Optional[Object]) -> Union[Object, dict, None]:
        """Returns the full new object; returning ``None`` means ``obj``, edited in
        place. ``other`` is the object's counterpart on the other side, if it exists
        yet. A mutator may not change apiVersion, kind, metadata.name or
        metadata.namespace."""
        raise NotImplementedError(f"{type(self).__name__}.mutate")


class Namer(Plugin):
    """Decides what an object is called on the service cluster."""

    world = "namer"

    def name_object(self, ctx: Context, config: Any, obj: Object) -> Union[ObjectName, dict]:
        """Returns an :class:`ObjectName` (or ``{"name": ..., "namespace": ...}``);
        namespace ``None`` for cluster-scoped objects."""
        raise NotImplementedError(f"{type(self).__name__}.name_object")


class Projector(Plugin):
    """Transforms a CustomResourceDefinition before it is published to kcp."""

    world = "projector"

    def project(self, config: Any, crd: dict) -> dict:
        """``crd`` is an apiextensions.k8s.io/v1 CustomResourceDefinition; returns the
        projected CRD."""
        raise NotImplementedError(f"{type(self).__name__}.project")


class Renderer(Plugin):
    """Renders a template into Kubernetes objects (InitTemplates and similar)."""

    world = "renderer"

    def render(self, ctx: Context, config: Any, template: str, values: Any) -> List[dict]:
        """``values`` is the JSON object exposed to the template; returns one object
        per rendered document."""
        raise NotImplementedError(f"{type(self).__name__}.render")


WORLDS = {"mutator": Mutator, "namer": Namer, "projector": Projector, "renderer": Renderer}
