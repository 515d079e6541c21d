"""Read and write JSON values by dotted path, with the syntax of the Rust SDK's ``path``
module (gjson reads, sjson writes: what upstream PublishedResource mutations use).

Path syntax:

- Keys are separated by ``.``: ``metadata.labels.app``.
- A number selects an array element: ``spec.containers.0.image``. On an object a number
  is an ordinary key.
- ``\\`` escapes the next character: ``metadata.annotations.example\\.com/owner``
  (:func:`key` escapes a key for you).
- A leading ``:`` forces a segment to be an object key even if it is numeric.
- Reads only: ``*`` and ``?`` match any run of characters / one character in a key
  (the first matching key wins), and ``#`` is an array's length or, followed by more
  path, maps the rest of the path over every element (``spec.items.#.name``).
- Writes only: ``-1`` appends to an array (for :func:`delete`: removes the last
  element). Writing to a missing path creates it: numeric segments create arrays
  (padded with ``None``), others objects; a scalar in the way is replaced.

A path may also be given as a list of keys, taken literally (no escapes, no wildcards):
``get(obj, ["metadata", "labels", "example.com/team"])``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, List, Sequence, Union

PathLike = Union[str, Sequence[str]]

_MISSING = object()


class PathError(ValueError):
    """The path cannot be used for this operation (the message says why and the fix)."""


@dataclass(frozen=True)
class _Segment:
    key: str
    force_key: bool = False
    pattern: bool = False
    hash: bool = False
    glob: str = ""

    def index(self) -> int | None:
        if self.force_key or self.pattern or self.hash:
            return None
        if self.key and self.key.isascii() and self.key.isdigit():
            return int(self.key)
        return None

    def is_append(self) -> bool:
        return not self.force_key and self.key == "-1"

    def matches(self, candidate: str) -> bool:
        return fnmatchcase(candidate, self.glob) if self.pattern else candidate == self.key


def key(k: str) -> str:
    """Escapes one object key for use as a path segment (``example.com/x`` ->
    ``example\\.com/x``)."""
    out = []
    for c in k:
        if c in "\\.*?#:" and (c != ":" or not out):
            out.append("\\")
        out.append(c)
    return "".join(out)


def _parse(path: PathLike) -> List[_Segment]:
    if not isinstance(path, str):
        # A list of keys: strings are object keys, ints array indices (-1 appends).
        return [_Segment(key=str(k), force_key=not isinstance(k, int)) for k in path]
    segments = []
    raw_segments: List[str] = []
    current = []
    i = 0
    while i < len(path):
        c = path[i]
        if c == "\\" and i + 1 < len(path):
            current.append(path[i : i + 2])
            i += 2
            continue
        if c == ".":
            raw_segments.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    raw_segments.append("".join(current))
    for raw in raw_segments:
        force_key = raw.startswith(":")
        body = raw[1:] if force_key else raw
        text, glob, pattern, escaped = [], [], False, False
        j = 0
        while j < len(body):
            c = body[j]
            if c == "\\" and j + 1 < len(body):
                nxt = body[j + 1]
                text.append(nxt)
                glob.append("[" + nxt + "]" if nxt in "*?[]" else nxt)
                escaped = True
                j += 2
                continue
            if c in "*?":
                pattern = True
                glob.append(c)
            else:
                glob.append("[" + c + "]" if c in "[]" else c)
            text.append(c)
            j += 1
        k = "".join(text)
        segments.append(
            _Segment(
                key=k,
                force_key=force_key,
                pattern=pattern,
                hash=(k == "#" and not escaped and not force_key),
                glob="".join(glob),
            )
        )
    return segments


def _get(value: Any, segments: List[_Segment]) -> Any:
    current = value
    for n, seg in enumerate(segments):
        if seg.hash:
            if not isinstance(current, list):
                return _MISSING
            rest = segments[n + 1 :]
            if not rest:
                return len(current)
            out = []
            for item in current:
                got = _get(item, rest)
                if got is not _MISSING:
                    out.append(got)
            return out
        if isinstance(current, dict):
            if seg.pattern:
                for k in current:
                    if seg.matches(k):
                        current = current[k]
                        break
                else:
                    return _MISSING
            elif seg.key in current:
                current = current[seg.key]
            else:
                return _MISSING
        elif isinstance(current, list):
            idx = seg.index()
            if idx is None or idx >= len(current):
                return _MISSING
            current = current[idx]
        else:
            return _MISSING
    return current


def get(value: Any, path: PathLike, default: Any = None) -> Any:
    """The value at ``path``, or ``default`` when nothing is there. The result is the
    value inside ``value`` (not a copy): editing a returned dict edits ``value``."""
    got = _get(value, _parse(path))
    return default if got is _MISSING else got


def exists(value: Any, path: PathLike) -> bool:
    """Whether ``path`` names something in ``value`` (a ``None`` there counts)."""
    return _get(value, _parse(path)) is not _MISSING


def get_string(value: Any, path: PathLike) -> str:
    """The value at ``path`` coerced to a string like gjson's ``String()``: strings as
    they are, ``None``/missing as ``""``, booleans as ``true``/``false``, numbers in
    JSON form, objects and arrays as compact JSON."""
    import json

    got = _get(value, _parse(path))
    if got is _MISSING or got is None:
        return ""
    if isinstance(got, str):
        return got
    if isinstance(got, bool):
        return "true" if got else "false"
    if isinstance(got, float) and got.is_integer() and abs(got) < 1e15:
        return str(int(got))
    return json.dumps(got, separators=(",", ":"), ensure_ascii=False)


def _check_writable(path: PathLike, segments: List[_Segment]) -> None:
    if not segments or (len(segments) == 1 and segments[0].key == "" and isinstance(path, str)):
        raise PathError('the path is empty; name the field to write, e.g. "spec.replicas"')
    for seg in segments:
        if seg.pattern:
            raise PathError(
                f"path {path!r} contains a wildcard (* or ?), which can only be used to read; "
                "escape it as \\* or \\? if it is part of a key"
            )
        if seg.hash:
            raise PathError(
                f"path {path!r} contains '#', which can only be used to read; "
                "escape it as \\# if it is part of a key"
            )


def _container_for(seg: _Segment) -> Any:
    return [] if (seg.index() is not None or seg.is_append()) else {}


def set(value: Any, path: PathLike, new: Any) -> None:  # noqa: A001 - mirrors the Rust SDK
    """Writes ``new`` at ``path`` in ``value`` (a dict or list), creating what is
    missing. Raises :class:`PathError` for read-only syntax or a key used on an array."""
    segments = _parse(path)
    _check_writable(path, segments)
    current = value
    for n, seg in enumerate(segments):
        last = n == len(segments) - 1
        nxt = None if last else segments[n + 1]
        if isinstance(current, list):
            if seg.is_append():
                current.append(new if last else _container_for(nxt))
                current = current[-1]
                continue
            idx = seg.index()
            if idx is None:
                raise PathError(
                    f"path {path!r}: cannot use key {seg.key!r} on an array; "
                    "use a numeric index or -1 to append"
                )
            while len(current) <= idx:
                current.append(None)
            if last:
                current[idx] = new
                return
            if not isinstance(current[idx], (dict, list)):
                current[idx] = _container_for(nxt)
            current = current[idx]
        elif isinstance(current, dict):
            if last:
                current[seg.key] = new
                return
            if not isinstance(current.get(seg.key), (dict, list)):
                current[seg.key] = _container_for(nxt)
            current = current[seg.key]
        else:
            raise PathError(f"path {path!r}: the value to write into is not an object or array")


def delete(value: Any, path: PathLike) -> Any:
    """Removes what ``path`` names and returns it (None when nothing was there)."""
    segments = _parse(path)
    _check_writable(path, segments)
    parent = _get(value, segments[:-1]) if len(segments) > 1 else value
    last = segments[-1]
    if isinstance(parent, dict):
        return parent.pop(last.key, None)
    if isinstance(parent, list):
        if last.is_append():
            return parent.pop() if parent else None
        idx = last.index()
        if idx is not None and idx < len(parent):
            return parent.pop(idx)
    return None
