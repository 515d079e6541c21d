"""Which version of the plugin contract a plugin targets, and the checks that keep a
plugin, its declarations and its build on the same one.

A plugin targets contract 0.1 (``wit/plugin.wit``) unless its class says otherwise::

    class NamespaceLabels(Mutator):
        contract = "0.2"        # wit/v0.2/plugin.wit: reads, report, ctx.values

Its project says the same to ``syncweave plugin build`` (``contract = "0.2"`` under
``[tool.syncweave]`` in ``pyproject.toml``), which then builds the component against the
0.2 world; :func:`syncweave_plugin.component.exports` refuses to build a plugin whose
``contract`` is not the world's. Using a 0.2 feature (declaring reads, examples with read
fixtures or context values, calling :mod:`~syncweave_plugin.reads` or
:mod:`~syncweave_plugin.report`) under 0.1 is an error that names this attribute.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

CONTRACTS: Tuple[str, ...] = ("0.1", "0.2")
"""The contract versions this SDK implements, oldest first."""

DEFAULT = "0.1"
"""What a plugin without a ``contract`` attribute targets (every plugin written before 0.2)."""

WIT_PACKAGES: Dict[str, str] = {
    "0.1": "syncweave:plugin@0.1.0",
    "0.2": "syncweave:plugin@0.2.0",
}
"""The WIT package of each contract version (``wit/plugin.wit``, ``wit/v0.2/plugin.wit``)."""


class ContractError(Exception):
    """A plugin uses something its contract version does not have, or is built against
    another version than the one it declares. The message names the attribute to set."""


def normalize(version: Any, where: str = "contract") -> str:
    """``"0.2"`` for ``"0.2"`` and ``"0.2.0"``; a ContractError for anything else."""
    if isinstance(version, str):
        v = version.strip()
        if v.endswith(".0") and v.count(".") == 2:
            v = v[:-2]
        if v in CONTRACTS:
            return v
    raise ContractError(
        f"{where} = {version!r} is not a contract version this SDK knows; use one of "
        + ", ".join(repr(c) for c in CONTRACTS)
    )


def of(plugin: Any) -> str:
    """The contract version ``plugin`` targets."""
    return normalize(getattr(plugin, "contract", DEFAULT), f"{_name(plugin)}.contract")


def _name(plugin: Any) -> str:
    return type(plugin).__name__


def needs_02(plugin: Any, feature: str) -> ContractError:
    """The error for using ``feature`` (a 0.2 feature) in a plugin that targets 0.1."""
    return ContractError(
        f"{feature} is a contract 0.2 feature, but {_name(plugin)} targets contract {of(plugin)}: set "
        f'contract = "0.2" on class {_name(plugin)}, and contract = "0.2" under [tool.syncweave] '
        "in pyproject.toml so that `syncweave plugin build` uses the 0.2 world"
    )


def check(plugin: Any) -> str:
    """Checks that the plugin's declarations fit its contract version; returns the version.

    Raises ContractError naming the attribute and the fix: an unknown ``contract``, reads,
    read fixtures or context values under 0.1, reads in a projector (its world imports
    no reads), a read fixture for a resource the plugin does not declare."""
    from .types import ReadDeclaration, ReadFixture  # late: types imports nothing from here

    version = of(plugin)
    name = _name(plugin)
    declared = list(getattr(plugin, "reads", ()) or ())
    for i, decl in enumerate(declared):
        if not isinstance(decl, ReadDeclaration):
            raise ContractError(f"{name}.reads[{i}] must be a ReadDeclaration(side, resource, purpose), not {decl!r}")
    if declared and version == "0.1":
        raise needs_02(plugin, f"declaring reads ({name}.reads)")
    if declared and getattr(plugin, "world", "") == "projector":
        raise ContractError(
            f"{name} is a Projector, which cannot read: the projector world imports no reads "
            "(a projection runs once per CRD, for no consumer); remove its reads"
        )
    allowed = {(d.side, d.resource) for d in declared}
    for example in getattr(plugin, "examples", ()) or ():
        fixtures = list(getattr(example, "reads", ()) or ())
        values = getattr(example, "values", None) or {}
        if (fixtures or values) and version == "0.1":
            what = "read fixtures" if fixtures else "context values"
            raise needs_02(plugin, f"{what} in example {example.name!r}")
        for i, fixture in enumerate(fixtures):
            if not isinstance(fixture, ReadFixture):
                raise ContractError(f"example {example.name!r}: reads[{i}] must be a ReadFixture, not {fixture!r}")
            if (fixture.side, fixture.resource) not in allowed:
                raise ContractError(
                    f"example {example.name!r} has a read fixture for {fixture.resource} on "
                    f"{fixture.side.value}, which {name} does not declare in reads; add "
                    f"ReadDeclaration(Side.{fixture.side.name}, {_resource_repr(fixture.resource)}, purpose) "
                    "to reads, or drop the fixture"
                )
    return version


def _resource_repr(resource: Any) -> str:
    if resource.group == "":
        return f"Resource.core({resource.version!r}, {resource.resource!r})"
    return f"Resource({resource.group!r}, {resource.version!r}, {resource.resource!r})"
