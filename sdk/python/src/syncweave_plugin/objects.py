"""Kubernetes objects as plugins see them.

:class:`Object` is a ``dict`` (so ``json.dumps``, ``==`` and item access work as usual)
with typed accessors for what plugins touch most: identity, metadata, labels and
annotations, paths and patches. Mutators and namers receive their object as an
``Object``; wrap any other dict with ``Object(d)`` (a shallow copy that shares nested
values).

Reading never changes the object: ``obj.labels`` of an object without labels is an
empty read-only mapping, and nothing is added to the output until you write.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Optional

from . import patch as _patch
from . import path as _path
from .errors import InvalidInput


class Object(dict):
    """A Kubernetes object (or any JSON object) with typed helpers."""

    # --- identity -------------------------------------------------------------------

    @property
    def api_version(self) -> Optional[str]:
        v = self.get("apiVersion")
        return v if isinstance(v, str) else None

    @property
    def kind(self) -> Optional[str]:
        v = self.get("kind")
        return v if isinstance(v, str) else None

    @property
    def name(self) -> Optional[str]:
        v = self._metadata_or_empty().get("name")
        return v if isinstance(v, str) else None

    @property
    def namespace(self) -> Optional[str]:
        """None for cluster-scoped objects."""
        v = self._metadata_or_empty().get("namespace")
        return v if isinstance(v, str) else None

    @property
    def generate_name(self) -> Optional[str]:
        v = self._metadata_or_empty().get("generateName")
        return v if isinstance(v, str) else None

    # --- metadata -------------------------------------------------------------------

    def _metadata_or_empty(self) -> Mapping[str, Any]:
        md = self.get("metadata")
        if md is None:
            return {}
        if not isinstance(md, dict):
            raise InvalidInput("metadata must be an object")
        return md

    @property
    def metadata(self) -> dict:
        """``metadata``, created when missing. Raises InvalidInput when it is not an
        object."""
        md = self.setdefault("metadata", {})
        if not isinstance(md, dict):
            raise InvalidInput("metadata must be an object")
        return md

    def _string_map(self, field: str) -> Mapping[str, str]:
        m = self._metadata_or_empty().get(field)
        if m is None:
            return MappingProxyType({})
        if not isinstance(m, dict):
            raise InvalidInput(f"metadata.{field} must be an object")
        return MappingProxyType(m)

    def _writable_map(self, field: str) -> dict:
        md = self.metadata
        m = md.get(field)
        if m is None:
            m = md[field] = {}
        if not isinstance(m, dict):
            raise InvalidInput(f"metadata.{field} must be an object")
        return m

    @property
    def labels(self) -> Mapping[str, str]:
        """The labels, read-only (write with :meth:`set_label`)."""
        return self._string_map("labels")

    @property
    def annotations(self) -> Mapping[str, str]:
        """The annotations, read-only (write with :meth:`set_annotation`)."""
        return self._string_map("annotations")

    def label(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return self.labels.get(key, default)

    def set_label(self, key: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"label {key!r}: values must be strings, not {type(value).__name__}")
        self._writable_map("labels")[key] = value

    def remove_label(self, key: str) -> Optional[str]:
        """Removes a label; returns its value (None when it was not set)."""
        if key not in self.labels:
            return None
        return self._writable_map("labels").pop(key)

    def annotation(self, key: str, default: Optional[str] = None) -> Optional[str]:
        return self.annotations.get(key, default)

    def set_annotation(self, key: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"annotation {key!r}: values must be strings, not {type(value).__name__}")
        self._writable_map("annotations")[key] = value

    def remove_annotation(self, key: str) -> Optional[str]:
        if key not in self.annotations:
            return None
        return self._writable_map("annotations").pop(key)

    # --- paths and patches ----------------------------------------------------------

    def get_path(self, path: _path.PathLike, default: Any = None) -> Any:
        """The value at a dotted path (see :mod:`syncweave_plugin.path`)."""
        return _path.get(self, path, default)

    def get_string(self, path: _path.PathLike) -> str:
        return _path.get_string(self, path)

    def has_path(self, path: _path.PathLike) -> bool:
        return _path.exists(self, path)

    def set_path(self, path: _path.PathLike, value: Any) -> None:
        _path.set(self, path, value)

    def delete_path(self, path: _path.PathLike) -> Any:
        return _path.delete(self, path)

    def merge_patch(self, patch: Any) -> None:
        """Applies a JSON merge patch (RFC 7386) in place."""
        result = _patch.merge_patch(dict(self), patch)
        if not isinstance(result, dict):
            raise InvalidInput("a merge patch must turn an object into an object")
        self.clear()
        self.update(result)

    def json_patch(self, operations: Any) -> None:
        """Applies a JSON patch (RFC 6902) in place, all or nothing."""
        result = _patch.json_patch(dict(self), operations)
        if not isinstance(result, dict):
            raise InvalidInput("a JSON patch must turn an object into an object")
        self.clear()
        self.update(result)

    def to_dict(self) -> dict:
        return dict(self)
