"""Python SDK for syncweave Wasm plugins.

A plugin is an instance of one role class (:class:`Mutator`, :class:`Namer`,
:class:`Projector`, :class:`Renderer`); :func:`syncweave_plugin.component.exports`
turns it into the classes componentize-py exports, and :mod:`syncweave_plugin.testing`
calls it locally with a context and config. Helpers: :class:`Object` (typed access to
a Kubernetes object), :mod:`~syncweave_plugin.path` (gjson/sjson-style paths),
:mod:`~syncweave_plugin.patch` (JSON merge patch and JSON patch),
:mod:`~syncweave_plugin.config` (config checks that name the field) and
:mod:`~syncweave_plugin.log` (the host's log).

Contract 0.2 (opt in with ``contract = "0.2"`` on the plugin class, see
:mod:`~syncweave_plugin.contract`) adds :mod:`~syncweave_plugin.reads` (get and list
other objects), :mod:`~syncweave_plugin.report` (Events, conditions, context values for
later steps) and ``ctx.values``.
"""

from . import config, contract, log, patch, path, reads, report, selector, testing
from .contract import CONTRACTS, WIT_PACKAGES, ContractError
from .errors import (
    Internal,
    InvalidConfig,
    InvalidInput,
    PluginError,
    ReadError,
    ReadInvalid,
    ReadNotAllowed,
    ReadNotServed,
    ReadUnavailable,
    Rejected,
)
from .objects import Object
from .plugin import Mutator, Namer, Plugin, Projector, Renderer
from .types import (
    CallResult,
    Condition,
    Context,
    Direction,
    Example,
    ObjectName,
    ReadDeclaration,
    ReadFixture,
    Report,
    Resource,
    Severity,
    Side,
)

__version__ = "0.1.0"
"""The SDK's version: the version of ``wit/plugin.wit``, the contract plugins target by
default. The SDK implements every version in :data:`CONTRACTS`."""

WIT_PACKAGE = "syncweave:plugin@0.1.0"
"""The default plugin contract (``wit/plugin.wit``); :data:`WIT_PACKAGES` has each
version this SDK implements."""

__all__ = [
    "CONTRACTS",
    "CallResult",
    "Condition",
    "ContractError",
    "ReadDeclaration",
    "ReadError",
    "ReadFixture",
    "ReadInvalid",
    "ReadNotAllowed",
    "ReadNotServed",
    "ReadUnavailable",
    "Report",
    "Resource",
    "Severity",
    "Side",
    "WIT_PACKAGES",
    "contract",
    "reads",
    "report",
    "selector",
    "Context",
    "Direction",
    "Example",
    "Internal",
    "InvalidConfig",
    "InvalidInput",
    "Mutator",
    "Namer",
    "Object",
    "ObjectName",
    "Plugin",
    "PluginError",
    "Projector",
    "Rejected",
    "Renderer",
    "WIT_PACKAGE",
    "__version__",
    "config",
    "log",
    "patch",
    "path",
    "testing",
]
