"""The state of the call in progress: which plugin, its contract, the context values it
was given, the report it is filling and the reads backend that answers it.

The adapters (:mod:`syncweave_plugin.adapter`) open one :class:`Call` around every role
method; :mod:`syncweave_plugin.reads` and :mod:`syncweave_plugin.report` find it here.
A component serves one call at a time, and so does the local harness.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, List, Mapping, Optional, Protocol

from . import contract
from .types import Report, Resource, Side


class ReadsBackend(Protocol):
    """What answers reads: the host's ``reads`` import inside a component, read fixtures
    in the harness. Both raise :class:`~syncweave_plugin.errors.ReadError` subclasses."""

    def get(self, side: Side, resource: Resource, namespace: Optional[str], name: str) -> Optional[str]: ...

    def list(self, side: Side, resource: Resource, namespace: Optional[str], label_selector: Optional[str]) -> List[str]: ...


class Call:
    def __init__(self, plugin: Any, version: str, values: Mapping[str, Any], reads: Optional[ReadsBackend]) -> None:
        self.plugin = plugin
        self.contract = version
        self.values = values
        self.reads = reads
        self.report = Report()


_current: Optional[Call] = None


@contextmanager
def active(call: Call) -> Iterator[Call]:
    global _current
    previous = _current
    _current = call
    try:
        yield call
    finally:
        _current = previous


def current(feature: str) -> Call:
    """The call in progress, for a contract 0.2 ``feature``; a ContractError outside a
    call or under contract 0.1."""
    if _current is None:
        raise contract.ContractError(
            f"{feature} was called outside a plugin call; it works only while the host (or "
            "syncweave_plugin.testing) calls mutate, name_object or render"
        )
    if _current.contract == "0.1":
        raise contract.needs_02(_current.plugin, feature)
    return _current
