"""Reads of other objects (contract 0.2), answered by the host from its caches.

    from syncweave_plugin import Resource, Side, reads

    NAMESPACES = Resource.core("v1", "namespaces")

    ns = reads.get(Side.KCP, NAMESPACES, name=obj.namespace)          # Object or None
    dbs = reads.list(Side.SERVICE, Resource("apps", "v1", "statefulsets"),
                     namespace="tenants", label_selector={"app": "db"})  # [Object]

A plugin may read only what it declares in its ``reads`` (a list of
:class:`~syncweave_plugin.types.ReadDeclaration`) and what its WasmPlugin or
PublishedResource allows. A read that is not answered raises a
:class:`~syncweave_plugin.errors.ReadError` subclass named after the contract's
``read-error``: :class:`~syncweave_plugin.errors.ReadNotAllowed`,
:class:`~syncweave_plugin.errors.ReadNotServed`,
:class:`~syncweave_plugin.errors.ReadUnavailable` (may be retried) and
:class:`~syncweave_plugin.errors.ReadInvalid`. Uncaught, it fails the call as
``internal`` with the read and the host's message.

Inside a component the host's ``reads`` import answers; in
:mod:`syncweave_plugin.testing` the read fixtures of the test or example do.
"""

from __future__ import annotations

import builtins
import json
from typing import Any, List, Mapping, Optional, Union

from . import _call
from . import selector as _selector
from .contract import ContractError
from .errors import Internal, ReadError
from .objects import Object
from .types import Resource, Side


def _args(side: Any, resource: Any, namespace: Any) -> tuple:
    side = Side.of(side)
    if not isinstance(resource, Resource):
        raise TypeError(f"resource must be a Resource (e.g. Resource.core(\"v1\", \"namespaces\")), not {resource!r}")
    if namespace is not None and (not isinstance(namespace, str) or namespace == ""):
        raise ValueError(f"namespace must be a non-empty string, or None for cluster-scoped resources; got {namespace!r}")
    return side, resource


def _backend(feature: str) -> Any:
    call = _call.current(feature)
    if call.reads is None:
        raise ContractError(f"{feature}: {type(call.plugin).__name__} cannot read (its world imports no reads)")
    return call.reads


def _describe(verb: str, side: Side, resource: Resource, **fields: Any) -> str:
    extra = "".join(f", {k}={v!r}" for k, v in fields.items() if v is not None)
    return f"reads.{verb}({side.value}, {resource}{extra})"


def _object(text: Any, read: str) -> Object:
    try:
        value = json.loads(text)
    except (TypeError, json.JSONDecodeError) as err:
        raise Internal(f"{read}: the host answered with something that is not JSON: {err}") from None
    if not isinstance(value, dict):
        raise Internal(f"{read}: the host answered with JSON that is not an object")
    return Object(value)


def get(side: Union[Side, str], resource: Resource, name: str, *, namespace: Optional[str] = None) -> Optional[Object]:
    """The object called ``name`` (in ``namespace``; None for cluster-scoped resources),
    or None when it does not exist."""
    side, resource = _args(side, resource, namespace)
    if not isinstance(name, str) or name == "":
        raise ValueError(f"name must be a non-empty string, not {name!r}")
    read = _describe("get", side, resource, namespace=namespace, name=name)
    backend = _backend("reads.get")
    try:
        text = backend.get(side, resource, namespace, name)
    except ReadError as err:
        raise type(err)(err.detail, read) from None
    return None if text is None else _object(text, read)


def list(  # noqa: A001 - the contract's name for it
    side: Union[Side, str],
    resource: Resource,
    *,
    namespace: Optional[str] = None,
    label_selector: Union[str, Mapping[str, str], None] = None,
) -> List[Object]:
    """The objects of ``resource``: in ``namespace`` (None: every namespace the
    allow-list grants, or the cluster-scoped objects), matching ``label_selector``
    (Kubernetes syntax such as ``"app=db,tier!=x"``, or a dict of labels that must all
    match)."""
    side, resource = _args(side, resource, namespace)
    if isinstance(label_selector, Mapping):
        label_selector = _selector.from_mapping(label_selector)
    if label_selector is not None and not isinstance(label_selector, str):
        raise TypeError(f"label_selector must be a string or a dict of labels, not {label_selector!r}")
    if label_selector == "":
        label_selector = None
    read = _describe("list", side, resource, namespace=namespace, label_selector=label_selector)
    backend = _backend("reads.list")
    try:
        texts = backend.list(side, resource, namespace, label_selector)
    except ReadError as err:
        raise type(err)(err.detail, read) from None
    return [_object(t, read) for t in builtins.list(texts)]
