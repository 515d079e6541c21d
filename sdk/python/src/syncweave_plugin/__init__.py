"""Python SDK for syncweave Wasm plugins.

A plugin is an instance of one role class (:class:`Mutator`, :class:`Namer`,
:class:`Projector`, :class:`Renderer`); :func:`syncweave_plugin.component.exports`
turns it into the classes componentize-py exports, and :mod:`syncweave_plugin.testing`
calls it locally with a context and config. Helpers: :class:`Object` (typed access to
a Kubernetes object), :mod:`~syncweave_plugin.path` (gjson/sjson-style paths),
:mod:`~syncweave_plugin.patch` (JSON merge patch and JSON patch),
:mod:`~syncweave_plugin.config` (config checks that name the field) and
:mod:`~syncweave_plugin.log` (the host's log).
"""

from . import config, log, patch, path, testing
from .errors import Internal, InvalidConfig, InvalidInput, PluginError, Rejected
from .objects import Object
from .plugin import Mutator, Namer, Plugin, Projector, Renderer
from .types import Context, Direction, Example, ObjectName

__version__ = "0.1.0"
"""The SDK's version: always the version of the WIT package it implements."""

WIT_PACKAGE = "syncweave:plugin@0.1.0"
"""The plugin contract (``wit/plugin.wit``) this SDK implements."""

__all__ = [
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
