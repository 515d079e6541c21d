"""Plain Python versions of the contract's types (``wit/plugin.wit``, interface ``types``,
and ``wit/v0.2/plugin.wit`` for what contract 0.2 adds: reads, reports and context
values)."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union


class Direction(enum.Enum):
    """Which way an object is travelling."""

    KCP_TO_SERVICE = "kcp-to-service"
    """From a consumer's kcp workspace down to the service cluster (spec)."""
    SERVICE_TO_KCP = "service-to-kcp"
    """From the service cluster back up to kcp (status, related objects)."""


@dataclass(frozen=True)
class Context:
    """Where a call comes from. A plugin gets nothing else from the host: no clock, no
    randomness, and no I/O but :mod:`~syncweave_plugin.reads` (contract 0.2)."""

    cluster_name: str
    """Logical cluster name of the consumer workspace (e.g. ``2x8fkdtr3b1z``)."""
    cluster_path: Optional[str] = None
    """Workspace path (e.g. ``root:org:team``), when the host knows it."""
    direction: Direction = Direction.KCP_TO_SERVICE
    owner: str = ""
    """Name of the PublishedResource or InitTarget the call is made for."""
    values: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """Contract 0.2: the values earlier steps of the same mutation chain set (with
    :func:`syncweave_plugin.report.set_context`), JSON values by key, in the order they
    were set. Empty for the first step, outside chains, and always under contract 0.1.
    ``ctx.values.get("tenant")`` is ``None`` when no step set it."""

    @classmethod
    def fixture(cls, values: Optional[Mapping[str, Any]] = None) -> "Context":
        """The context worked examples run in (``syncweave plugin test --examples``, the
        host's self-test and :mod:`syncweave_plugin.testing`), with ``values`` from
        earlier steps (contract 0.2)."""
        return cls(
            cluster_name="fixture-cluster",
            cluster_path="root:fixture",
            direction=Direction.KCP_TO_SERVICE,
            owner="fixture",
            values=dict(values or {}),
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
    reads: Sequence["ReadFixture"] = ()
    """Contract 0.2: what the plugin's reads see in this example (a read of a declared
    resource without a fixture sees no objects)."""
    values: Mapping[str, Any] = field(default_factory=dict)
    """Contract 0.2: context values from earlier steps, JSON values by key."""


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


# --- contract 0.2: reads -------------------------------------------------------------


class Side(enum.Enum):
    """Which API server a read goes to (contract 0.2)."""

    KCP = "kcp"
    """The consumer's workspace in kcp (the workspace of the object the call is for)."""
    SERVICE = "service"
    """The provider's service cluster."""

    @classmethod
    def of(cls, value: Union["Side", str], where: str = "side") -> "Side":
        """``value`` as a Side; accepts the WIT names ``"kcp"`` and ``"service"``."""
        if isinstance(value, Side):
            return value
        for side in cls:
            if value == side.value:
                return side
        raise ValueError(f"{where} must be Side.KCP or Side.SERVICE, not {value!r}")


_DNS_LABELS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class Resource:
    """A resource type: API group (``""`` for the core group), version and the plural,
    lower-case resource name (``namespaces``, not the kind ``Namespace``).

        NAMESPACES = Resource.core("v1", "namespaces")
        DEPLOYMENTS = Resource("apps", "v1", "deployments")   # or Resource.of("apps/v1", "deployments")
    """

    group: str
    version: str
    resource: str

    def __post_init__(self) -> None:
        for what in ("group", "version", "resource"):
            if not isinstance(getattr(self, what), str):
                raise TypeError(f"Resource.{what} must be a string, not {type(getattr(self, what)).__name__}")
        if self.group and not _DNS_LABELS.match(self.group):
            raise ValueError(f"Resource.group {self.group!r} is not an API group (e.g. \"apps\", or \"\" for the core group)")
        if not self.version or "/" in self.version:
            raise ValueError(
                f"Resource.version {self.version!r} must be a version such as \"v1\"; "
                "give the group separately, or use Resource.of(\"apps/v1\", ...)"
            )
        if not _DNS_LABELS.match(self.resource):
            hint = (
                f" ({self.resource!r} looks like a kind; reads name the resource, e.g. \"namespaces\" for kind Namespace)"
                if self.resource[:1].isupper()
                else ""
            )
            raise ValueError(f"Resource.resource {self.resource!r} must be the plural, lower-case resource name{hint}")

    @classmethod
    def core(cls, version: str, resource: str) -> "Resource":
        """A resource of the core group: ``Resource.core("v1", "namespaces")``."""
        return cls("", version, resource)

    @classmethod
    def of(cls, api_version: str, resource: str) -> "Resource":
        """From an apiVersion as objects carry it: ``Resource.of("apps/v1", "deployments")``,
        ``Resource.of("v1", "configmaps")``."""
        group, _, version = api_version.rpartition("/")
        return cls(group, version, resource)

    def __str__(self) -> str:
        return f"{self.group}/{self.version}/{self.resource}" if self.group else f"{self.version}/{self.resource}"


@dataclass(frozen=True)
class ReadDeclaration:
    """One kind of object a plugin reads (contract 0.2), listed in the plugin's ``reads``
    and published by ``describe()``. The host refuses every read that is not declared,
    and every read that its WasmPlugin or PublishedResource does not allow."""

    side: Side
    resource: Resource
    purpose: str
    """Why the plugin reads it, shown by ``syncweave plugin inspect``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "side", Side.of(self.side, "ReadDeclaration.side"))
        if not isinstance(self.resource, Resource):
            raise TypeError(f"ReadDeclaration.resource must be a Resource, not {self.resource!r}")
        if not isinstance(self.purpose, str) or not self.purpose.strip():
            raise ValueError(
                f"ReadDeclaration for {self.resource} on {self.side.value}: purpose must say why the plugin "
                "reads it (plugin inspect shows it to whoever allows the read)"
            )


@dataclass(frozen=True)
class ReadFixture:
    """The objects of one resource that reads see in an example or a test (contract
    0.2). ``objects`` are JSON objects (dicts); a get finds one by
    ``metadata.namespace`` and ``metadata.name``, a list filters them by namespace and
    label selector."""

    side: Side
    resource: Resource
    objects: Sequence[Mapping[str, Any]] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "side", Side.of(self.side, "ReadFixture.side"))
        if not isinstance(self.resource, Resource):
            raise TypeError(f"ReadFixture.resource must be a Resource, not {self.resource!r}")
        objects = tuple(self.objects)
        for i, obj in enumerate(objects):
            if not isinstance(obj, Mapping):
                raise TypeError(f"ReadFixture for {self.resource} on {self.side.value}: objects[{i}] must be a JSON object (dict)")
        object.__setattr__(self, "objects", objects)


# --- contract 0.2: reports -----------------------------------------------------------


class Severity(enum.Enum):
    """How much a result matters (contract 0.2). A fatal result is a raised
    :class:`~syncweave_plugin.errors.PluginError`."""

    NORMAL = "normal"
    """Worth telling the consumer (a Normal Event)."""
    WARNING = "warning"
    """Something is wrong or missing, but the output is usable (a Warning Event)."""


@dataclass(frozen=True)
class CallResult:
    """Something a call wants the consumer to know, beside its output."""

    severity: Severity
    reason: str
    """CamelCase, as an Event's reason (e.g. ``SubnetMissing``)."""
    message: str


@dataclass(frozen=True)
class Condition:
    """A condition a call reports on the object it handled."""

    type: str
    """CamelCase (e.g. ``SubnetResolved``)."""
    status: str
    """``"True"``, ``"False"`` or ``"Unknown"``."""
    reason: str
    message: str = ""


@dataclass
class Report:
    """What a call reports beside its output (contract 0.2): results (Events),
    conditions, and context values for the steps after this one. Plugins fill it with
    :mod:`syncweave_plugin.report`; :func:`syncweave_plugin.testing.call` returns it."""

    results: List[CallResult] = field(default_factory=list)
    conditions: List[Condition] = field(default_factory=list)
    set_context: Dict[str, Any] = field(default_factory=dict)
    """JSON values by key, in the order they were first set."""

    @property
    def warnings(self) -> List[tuple]:
        """``(reason, message)`` of every warning, in order."""
        return [(r.reason, r.message) for r in self.results if r.severity is Severity.WARNING]

    @property
    def normals(self) -> List[tuple]:
        """``(reason, message)`` of every normal result, in order."""
        return [(r.reason, r.message) for r in self.results if r.severity is Severity.NORMAL]

    def condition(self, type: str) -> Optional[Condition]:
        """The reported condition of that type, if any."""
        return next((c for c in self.conditions if c.type == type), None)

    def is_empty(self) -> bool:
        return not (self.results or self.conditions or self.set_context)
