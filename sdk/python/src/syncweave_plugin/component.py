"""Turns a plugin instance into the classes componentize-py exports.

The component's entry module (``app.py``) is two lines::

    from syncweave_plugin.component import exports
    from plugin import PLUGIN

    Meta, Mutation = exports(PLUGIN)   # Naming, Projection or Rendering for other roles

componentize-py generates the ``wit_world`` bindings at build time and looks for one
class per exported interface, named after it, in the entry module. These classes
convert the WIT records to the SDK's types, route :mod:`syncweave_plugin.log` to the
host's ``host-log`` import, and turn exceptions into the contract's ``plugin-error``.
This module imports ``wit_world``, which exists only while componentize-py builds the
component: unit tests use :mod:`syncweave_plugin.testing` instead.
"""

from __future__ import annotations

from typing import Any, Tuple

from . import adapter
from . import log as _log
from .errors import PluginError
from .plugin import Plugin
from .types import Context, Direction

INTERFACES = {"mutator": "Mutation", "namer": "Naming", "projector": "Projection", "renderer": "Rendering"}


def exports(plugin: Plugin) -> Tuple[type, type]:
    """``(Meta, <Role>)`` for the plugin's world; assign them in the entry module under
    those names (``Meta, Mutation = exports(PLUGIN)``)."""
    if not isinstance(plugin, Plugin) or plugin.world not in INTERFACES:
        raise TypeError(
            "exports() takes an instance of a Mutator, Namer, Projector or Renderer subclass, "
            f"not {plugin!r}"
        )
    # Only present inside componentize-py's build.
    from componentize_py_types import Err  # type: ignore[import-not-found]
    from wit_world import exports as wit_exports  # type: ignore[import-not-found]
    from wit_world.imports import host_log, types  # type: ignore[import-not-found]

    levels = {
        "trace": host_log.Level.TRACE,
        "debug": host_log.Level.DEBUG,
        "info": host_log.Level.INFO,
        "warn": host_log.Level.WARN,
        "error": host_log.Level.ERROR,
    }
    _log.install_sink(lambda level, message: host_log.log(levels[level], message))

    variants = {
        "invalid-config": types.PluginError_InvalidConfig,
        "invalid-input": types.PluginError_InvalidInput,
        "rejected": types.PluginError_Rejected,
        "internal": types.PluginError_Internal,
    }

    def fail(err: PluginError) -> Any:
        return Err(variants[err.tag](err.message))

    def context(ctx: Any) -> Context:
        direction = (
            Direction.SERVICE_TO_KCP
            if ctx.direction == types.Direction.SERVICE_TO_KCP
            else Direction.KCP_TO_SERVICE
        )
        return Context(
            cluster_name=ctx.cluster_name,
            cluster_path=ctx.cluster_path,
            direction=direction,
            owner=ctx.owner,
        )

    class Meta(wit_exports.Meta):
        def describe(self) -> Any:
            info = adapter.describe(plugin)
            return types.PluginInfo(
                name=info["name"],
                version=info["version"],
                description=info["description"],
                config_schema=info["config_schema"],
                examples=[
                    types.Fixture(name=e["name"], config=e["config"], input=e["input"], expected=e["expected"])
                    for e in info["examples"]
                ],
            )

        def validate_config(self, config: str) -> None:
            try:
                adapter.validate_config(plugin, config)
            except PluginError as err:
                raise Err(err.message if err.tag == "invalid-config" else f"{err.tag}: {err.message}")

    world = plugin.world
    if world == "mutator":

        class Mutation(wit_exports.Mutation):
            def mutate(self, ctx: Any, config: str, object: str, other: Any) -> str:
                try:
                    return adapter.mutate(plugin, context(ctx), config, object, other)  # type: ignore[arg-type]
                except PluginError as err:
                    raise fail(err)

        return Meta, Mutation

    if world == "namer":
        from wit_world.exports import naming  # type: ignore[import-not-found]

        class Naming(wit_exports.Naming):
            def name(self, ctx: Any, config: str, object: str) -> Any:
                try:
                    n = adapter.name(plugin, context(ctx), config, object)  # type: ignore[arg-type]
                except PluginError as err:
                    raise fail(err)
                return naming.ObjectName(name=n.name, namespace=n.namespace)

        return Meta, Naming

    if world == "projector":

        class Projection(wit_exports.Projection):
            def project(self, config: str, crd: str) -> str:
                try:
                    return adapter.project(plugin, config, crd)  # type: ignore[arg-type]
                except PluginError as err:
                    raise fail(err)

        return Meta, Projection

    class Rendering(wit_exports.Rendering):
        def render(self, ctx: Any, config: str, template: str, values: str) -> Any:
            try:
                return adapter.render(plugin, context(ctx), config, template, values)  # type: ignore[arg-type]
            except PluginError as err:
                raise fail(err)

    return Meta, Rendering
