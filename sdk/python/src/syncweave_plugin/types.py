"""Plain Python versions of the contract's types (``wit/plugin.wit``, interface ``types``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Optional


class Direction(enum.Enum):
    """Which way an object is travelling."""

    KCP_TO_SERVICE = "kcp-to-service"
    """From a consumer's kcp workspace down to the service cluster (spec)."""
    SERVICE_TO_KCP = "service-to-kcp"
    """From the service cluster back up to kcp (status, related objects)."""


@dataclass(frozen=True)
class Context:
    """Where a call comes from. A plugin gets nothing else from the host: no clock, no
    randomness, no I/O."""

    cluster_name: str
    """Logical cluster name of the consumer workspace (e.g. ``2x8fkdtr3b1z``)."""
    cluster_path: Optional[str] = None
    """Workspace path (e.g. ``root:org:team``), when the host knows it."""
    direction: Direction = Direction.KCP_TO_SERVICE
    owner: str = ""
    """Name of the PublishedResource or InitTarget the call is made for."""

    @classmethod
    def fixture(cls) -> "Context":
        """The context worked examples run in (``syncweave plugin test --examples``, the
        host's self-test and :mod:`syncweave_plugin.testing`)."""
        return cls(
            cluster_name="fixture-cluster",
            cluster_path="root:fixture",
            direction=Direction.KCP_TO_SERVICE,
            owner="fixture",
        )


@dataclass
class Example:
    """One worked example shipped in ``describe()``: config, input and, when the output
    is deterministic, the expected output (all JSON values, not text).

    The input is the object (mutator, namer), the CRD (projector) or the values
    (renderer); the expected output is the object, ``{"name": ..., "namespace": ...}``,
    the CRD, or the list of objects."""

    name: str
    config: Any
    input: Any
    expected: Any = None
    """None: the output is not compared, the example only has to run."""


@dataclass(frozen=True)
class ObjectName:
    """What a namer returns: the name on the service cluster, and its namespace (None
    for cluster-scoped objects)."""

    name: str
    namespace: Optional[str] = None

    def to_json(self) -> dict:
        """``{"name": ..., "namespace": ...}``; no namespace key for cluster-scoped names,
        as the host writes examples' outputs."""
        out: dict = {"name": self.name}
        if self.namespace is not None:
            out["namespace"] = self.namespace
        return out
