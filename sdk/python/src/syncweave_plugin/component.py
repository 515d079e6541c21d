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

The same two lines serve both contract versions. Which one the component is being built
for shows in the generated bindings (the 0.2 ``plugin-info`` has ``reads``);
:func:`exports` compares it with the plugin's ``contract`` and stops the build with the
fix when they differ (componentize-py runs this module while it builds). Under 0.2 the
exports return each output with its report, pass ``ctx.values`` in, and answer
:mod:`syncweave_plugin.reads` with the host's ``reads`` import.
"""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional, Tuple

from . import adapter, contract
from . import log as _log
from .contract import ContractError
from .errors import READ_ERRORS, Internal, PluginError
from .plugin import Plugin
from .types import Context, Direction, Report, Resource, Side

INTERFACES = {"mutator": "Mutation", "namer": "Naming", "projector": "Projection", "renderer": "Rendering"}


def world_contract(types: Any) -> str:
    """The contract version of the generated ``types`` bindings: ``"0.2"`` when its
    ``PluginInfo`` record has ``reads``."""
    fields = {f.name for f in dataclasses.fields(types.PluginInfo)}
    return "0.2" if "reads" in fields else "0.1"


def check_world(plugin: Plugin, built: str) -> str:
    """The plugin's contract version, when it is ``built`` (the world's); otherwise a
    ContractError that says how to make them agree."""
    declared = contract.check(plugin)
    if declared == built:
        return declared
    name = type(plugin).__name__
    package = contract.WIT_PACKAGES[built]
    if declared == "0.2":
        fix = (
            f'set contract = "0.2" under [tool.syncweave] in pyproject.toml so that `syncweave plugin build` '
            f'uses the 0.2 world, or remove contract = "0.2" from class {name} to stay on 0.1'
        )
    else:
        fix = (
            f'set contract = "0.2" on class {name} (the project builds against 0.2), or remove '
            f"contract from [tool.syncweave] in pyproject.toml to stay on 0.1"
        )
    raise ContractError(
        f"{name} targets contract {declared} (its contract attribute) but this component is being built "
        f"against {package}: {fix}"
    )


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

    version = check_world(plugin, world_contract(types))
    v02 = version == "0.2"

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
        values = adapter.context_values((e.key, e.value) for e in ctx.values) if v02 else {}
        return Context(
            cluster_name=ctx.cluster_name,
            cluster_path=ctx.cluster_path,
            direction=direction,
            owner=ctx.owner,
            values=values,
        )

    def wit_resource(r: dict) -> Any:
        return types.Resource(group=r["group"], version=r["version"], resource=r["resource"])

    def wit_side(side: str) -> Any:
        return types.Side.KCP if side == "kcp" else types.Side.SERVICE

    def wit_report(report: Report) -> Any:
        fields = adapter.report_fields(report)
        severities = {"normal": types.Severity.NORMAL, "warning": types.Severity.WARNING}
        return types.Report(
            results=[types.CallResult(severity=severities[s], reason=r, message=m) for s, r, m in fields["results"]],
            conditions=[types.Condition(type=t, status=s, reason=r, message=m) for t, s, r, m in fields["conditions"]],
            set_context=[types.ContextEntry(key=k, value=v) for k, v in fields["set_context"]],
        )

    reads_backend: Optional[Any] = None
    if v02 and plugin.world != "projector":
        from wit_world.imports import reads as wit_reads  # type: ignore[import-not-found]

        class HostReads:
            """The host's ``reads`` import; its read-error variants become ReadError
            subclasses."""

            @staticmethod
            def _error(err: Any) -> Exception:
                value = getattr(err, "value", err)
                kind = {
                    wit_reads.ReadError_NotAllowed: "not-allowed",
                    wit_reads.ReadError_NotServed: "not-served",
                    wit_reads.ReadError_Unavailable: "unavailable",
                    wit_reads.ReadError_Invalid: "invalid",
                }.get(type(value))
                if kind is None:
                    return Internal(f"the host's reads import failed with {value!r}")
                return READ_ERRORS[kind](value.value)

            def get(self, side: Side, resource: Resource, namespace: Optional[str], name: str) -> Optional[str]:
                try:
                    return wit_reads.get(wit_side(side.value), _to_wit(resource), namespace, name)
                except Err as err:
                    raise self._error(err) from None

            def list(self, side: Side, resource: Resource, namespace: Optional[str], label_selector: Optional[str]) -> List[str]:
                try:
                    return wit_reads.list(wit_side(side.value), _to_wit(resource), namespace, label_selector)
                except Err as err:
                    raise self._error(err) from None

        def _to_wit(r: Resource) -> Any:
            return types.Resource(group=r.group, version=r.version, resource=r.resource)

        reads_backend = HostReads()

    class Meta(wit_exports.Meta):
        def describe(self) -> Any:
            info = adapter.describe(plugin)
            if not v02:
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
            return types.PluginInfo(
                name=info["name"],
                version=info["version"],
                description=info["description"],
                config_schema=info["config_schema"],
                examples=[
                    types.Fixture(
                        name=e["name"],
                        config=e["config"],
                        input=e["input"],
                        expected=e["expected"],
                        reads=[
                            types.ReadFixture(side=wit_side(f["side"]), resource=wit_resource(f["resource"]), objects=f["objects"])
                            for f in e["reads"]
                        ],
                        values=[types.ContextEntry(key=k, value=v) for k, v in e["values"]],
                    )
                    for e in info["examples"]
                ],
                reads=[
                    types.ReadDeclaration(side=wit_side(d["side"]), resource=wit_resource(d["resource"]), purpose=d["purpose"])
                    for d in info["reads"]
                ],
            )

        def validate_config(self, config: str) -> None:
            try:
                adapter.validate_config(plugin, config)
            except PluginError as err:
                raise Err(err.message if err.tag == "invalid-config" else f"{err.tag}: {err.message}")

    world = plugin.world
    if world == "mutator":
        if v02:  # 0.1's mutation interface defines no types, so it has no module
            from wit_world.exports import mutation  # type: ignore[import-not-found]

        class Mutation(wit_exports.Mutation):
            def mutate(self, ctx: Any, config: str, object: str, other: Any) -> Any:
                try:
                    out, report = adapter.mutate(plugin, context(ctx), config, object, other, reads_backend)  # type: ignore[arg-type]
                    return mutation.Mutated(object=out, report=wit_report(report)) if v02 else out
                except PluginError as err:
                    raise fail(err)

        return Meta, Mutation

    if world == "namer":
        from wit_world.exports import naming  # type: ignore[import-not-found]

        class Naming(wit_exports.Naming):
            def name(self, ctx: Any, config: str, object: str) -> Any:
                try:
                    n, report = adapter.name(plugin, context(ctx), config, object, reads_backend)  # type: ignore[arg-type]
                    name = naming.ObjectName(name=n.name, namespace=n.namespace)
                    return naming.Named(name=name, report=wit_report(report)) if v02 else name
                except PluginError as err:
                    raise fail(err)

        return Meta, Naming

    if world == "projector":

        class Projection(wit_exports.Projection):
            def project(self, config: str, crd: str) -> str:
                try:
                    return adapter.project(plugin, config, crd)[0]  # type: ignore[arg-type]
                except PluginError as err:
                    raise fail(err)

        return Meta, Projection

    if v02:
        from wit_world.exports import rendering  # type: ignore[import-not-found]

    class Rendering(wit_exports.Rendering):
        def render(self, ctx: Any, config: str, template: str, values: str) -> Any:
            try:
                docs, report = adapter.render(plugin, context(ctx), config, template, values, reads_backend)  # type: ignore[arg-type]
                return rendering.Rendered(documents=docs, report=wit_report(report)) if v02 else docs
            except PluginError as err:
                raise fail(err)

    return Meta, Rendering
