"""JSON Merge Patch (RFC 7386) and JSON Patch (RFC 6902).

Both return a new value and never modify their inputs.
"""

from __future__ import annotations

import copy
from typing import Any, List


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: like ``==``, except that ``True`` is not ``1`` and ``False`` is
    not ``0`` (they are the same in Python, different in JSON)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return a == b


def merge_patch(target: Any, patch: Any) -> Any:
    """Applies a JSON merge patch: objects merge key by key, ``None`` removes a key,
    anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def create_merge_patch(original: Any, modified: Any) -> Any:
    """The merge patch that turns ``original`` into ``modified`` (``{}`` when they are
    equal). Arrays are replaced as a whole, as RFC 7386 does."""
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return copy.deepcopy(modified)
    out: dict = {}
    for k in original:
        if k not in modified:
            out[k] = None
    for k, v in modified.items():
        if k not in original:
            out[k] = copy.deepcopy(v)
        elif not json_equal(original[k], v):
            if isinstance(original[k], dict) and isinstance(v, dict):
                out[k] = create_merge_patch(original[k], v)
            else:
                out[k] = copy.deepcopy(v)
    return out


class PatchError(ValueError):
    """A JSON patch could not be applied; ``index`` is the failing operation's position."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(f"JSON patch operation {index}: {message}")
        self.index = index
        self.message = message


def _pointer(text: Any) -> List[str]:
    if not isinstance(text, str):
        raise ValueError("the path must be a string (a JSON pointer such as /metadata/labels/app)")
    if text == "":
        return []
    if not text.startswith("/"):
        raise ValueError(f"path {text!r} is not a JSON pointer: it must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in text[1:].split("/")]


def _array_index(token: str, length: int, for_add: bool) -> int:
    if for_add and token == "-":
        return length
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise ValueError(f"{token!r} is not an array index")
    idx = int(token)
    if idx > length or (idx == length and not for_add):
        raise ValueError(f"array index {idx} is out of range (length {length})")
    return idx


def _parent(doc: Any, tokens: List[str]) -> Any:
    current = doc
    for t in tokens[:-1]:
        if isinstance(current, dict):
            if t not in current:
                raise ValueError(f"/{'/'.join(tokens)}: {t!r} does not exist")
            current = current[t]
        elif isinstance(current, list):
            current = current[_array_index(t, len(current), False)]
        else:
            raise ValueError(f"/{'/'.join(tokens)}: cannot descend into a scalar at {t!r}")
    return current


def _get(doc: Any, tokens: List[str]) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ValueError(f"/{'/'.join(tokens)} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_array_index(last, len(parent), False)]
    raise ValueError(f"/{'/'.join(tokens)} does not exist")


def _add(doc: Any, tokens: List[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_array_index(last, len(parent), True), value)
    else:
        raise ValueError(f"/{'/'.join(tokens)}: the parent is not an object or array")
    return doc


def _remove(doc: Any, tokens: List[str]) -> Any:
    if not tokens:
        raise ValueError("cannot remove the whole document")
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise ValueError(f"/{'/'.join(tokens)} does not exist")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_array_index(last, len(parent), False)]
    else:
        raise ValueError(f"/{'/'.join(tokens)} does not exist")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """Applies a JSON patch (add, remove, replace, move, copy, test). All or nothing:
    raises :class:`PatchError` naming the failing operation, and ``target`` is never
    modified."""
    if not isinstance(operations, list):
        raise PatchError(0, "a JSON patch must be an array of operations")
    doc = copy.deepcopy(target)
    for index, op in enumerate(operations):
        try:
            if not isinstance(op, dict):
                raise ValueError("an operation must be an object")
            kind = op.get("op")
            path = _pointer(op.get("path"))
            if kind in ("add", "replace", "test") and "value" not in op:
                raise ValueError('missing field "value"')
            if kind == "add":
                doc = _add(doc, path, copy.deepcopy(op["value"]))
            elif kind == "remove":
                doc = _remove(doc, path)
            elif kind == "replace":
                _get(doc, path)
                doc = _add(_remove(doc, path), path, copy.deepcopy(op["value"])) if path else copy.deepcopy(op["value"])
            elif kind in ("move", "copy"):
                source = _pointer(op.get("from"))
                if kind == "move" and path[: len(source)] == source and len(path) > len(source):
                    raise ValueError("cannot move a value into one of its own children")
                value = copy.deepcopy(_get(doc, source))
                if kind == "move":
                    doc = _remove(doc, source)
                doc = _add(doc, path, value)
            elif kind == "test":
                actual = _get(doc, path)
                if not json_equal(actual, op["value"]):
                    raise ValueError(f"test failed: {op.get('path')} is {actual!r}, not {op['value']!r}")
            else:
                raise ValueError(f"unknown op {kind!r} (expected add, remove, replace, move, copy or test)")
        except PatchError:
            raise
        except (ValueError, IndexError, KeyError, TypeError) as err:
            raise PatchError(index, str(err)) from None
    return doc
