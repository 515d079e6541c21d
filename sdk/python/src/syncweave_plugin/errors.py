"""Typed failures: one exception class per variant of the contract's ``plugin-error``.

Raise them from plugin code; the component adapter turns them into the WIT result, and
the host reports them with the plugin's name and digest. Any other exception is a bug in
the plugin and is reported as ``internal`` (with where it was raised).
"""

from __future__ import annotations


class PluginError(Exception):
    """Base class; ``tag`` is the WIT variant name."""

    tag = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.message == self.message  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.message))


class InvalidConfig(PluginError):
    """The plugin's config is unusable: the user must fix it. Name the field."""

    tag = "invalid-config"


class InvalidInput(PluginError):
    """The input object does not have the shape the plugin needs."""

    tag = "invalid-input"


class Rejected(PluginError):
    """The plugin deliberately refuses this object (a policy decision)."""

    tag = "rejected"


class Internal(PluginError):
    """A bug or unexpected condition inside the plugin."""

    tag = "internal"


class ReadError(PluginError):
    """A read (contract 0.2, :mod:`syncweave_plugin.reads`) that the host did not answer.
    ``kind`` is the WIT variant of ``read-error``; ``detail`` is the host's message.
    Catch it (or one of its subclasses) to handle the failure; left uncaught, the call
    fails as ``internal`` with the read and the host's message."""

    kind = ""

    def __init__(self, detail: str, read: str = "") -> None:
        self.detail = detail
        self.read = read
        where = f"{read}: " if read else ""
        super().__init__(f"{where}{self.kind or 'read error'}: {detail}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.detail == self.detail  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.detail))


class ReadNotAllowed(ReadError):
    """The read is not declared in the plugin's ``reads`` or not allowed by its WasmPlugin
    or PublishedResource; the message names the allow-list."""

    kind = "not-allowed"


class ReadNotServed(ReadError):
    """The API server does not serve that resource."""

    kind = "not-served"


class ReadUnavailable(ReadError):
    """The host could not read it now (its cache is not synced, the server does not
    answer); the call may be retried."""

    kind = "unavailable"


class ReadInvalid(ReadError):
    """The request itself is malformed (e.g. a bad label selector)."""

    kind = "invalid"


READ_ERRORS = {cls.kind: cls for cls in (ReadNotAllowed, ReadNotServed, ReadUnavailable, ReadInvalid)}
"""The exception class for each ``read-error`` variant name."""


def from_tag(tag: str, message: str) -> PluginError:
    """The exception for a WIT variant name (``invalid-config``, ...)."""
    for cls in (InvalidConfig, InvalidInput, Rejected, Internal):
        if cls.tag == tag:
            return cls(message)
    raise ValueError(f"unknown plugin-error variant {tag!r}")
