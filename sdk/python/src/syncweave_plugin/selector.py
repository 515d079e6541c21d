"""Kubernetes label selectors (``app=db,tier!=cache,env in (a,b),!legacy``): parsing and
matching, for the harness's read fixtures. The host evaluates selectors itself; this is
the same syntax, so a selector that works in a test works against a cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Mapping, Optional, Tuple, Union

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")

_EXISTS = re.compile(r"^\s*(?P<not>!)?\s*(?P<key>[^\s!=<>(),]+)\s*$")
_EQUALITY = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=<>(),]*)\s*$")
_SET = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_ORDER = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s*(?P<op>[<>])\s*(?P<value>-?[0-9]+)\s*$")


class SelectorError(ValueError):
    """A selector that does not parse; the message quotes the bad requirement."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str
    """``exists``, ``!``, ``=``, ``!=``, ``in``, ``notin``, ``<`` or ``>``."""
    values: Tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if not present:
            return False
        try:
            number = int(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
        bound = int(self.values[0])
        return number < bound if self.op == "<" else number > bound


def _split(selector: str) -> List[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(selector):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"label selector {selector!r}: unbalanced ')'")
        elif ch == "," and depth == 0:
            parts.append(selector[start:i])
            start = i + 1
    if depth != 0:
        raise SelectorError(f"label selector {selector!r}: unbalanced '('")
    parts.append(selector[start:])
    return parts


def _key(key: str, part: str) -> str:
    if not _KEY.match(key):
        raise SelectorError(f"label selector requirement {part.strip()!r}: {key!r} is not a valid label key")
    return key


def _value(value: str, part: str) -> str:
    if not _VALUE.match(value):
        raise SelectorError(f"label selector requirement {part.strip()!r}: {value!r} is not a valid label value")
    return value


def parse(selector: Optional[str]) -> List[Requirement]:
    """The requirements of ``selector`` (all must match); ``None`` or ``""`` matches
    everything. Raises SelectorError."""
    if selector is None or selector.strip() == "":
        return []
    out = []
    for part in _split(selector):
        if part.strip() == "":
            raise SelectorError(f"label selector {selector!r}: empty requirement (a stray comma?)")
        m = _SET.match(part)
        if m:
            values = [v.strip() for v in m.group("values").split(",")]
            if values == [""]:
                raise SelectorError(f"label selector requirement {part.strip()!r}: {m.group('op')} needs at least one value")
            out.append(Requirement(_key(m.group("key"), part), m.group("op"), tuple(_value(v, part) for v in values)))
            continue
        m = _EQUALITY.match(part)
        if m:
            op = "=" if m.group("op") in ("=", "==") else "!="
            out.append(Requirement(_key(m.group("key"), part), op, (_value(m.group("value"), part),)))
            continue
        m = _ORDER.match(part)
        if m:
            out.append(Requirement(_key(m.group("key"), part), m.group("op"), (m.group("value"),)))
            continue
        m = _EXISTS.match(part)
        if m:
            out.append(Requirement(_key(m.group("key"), part), "!" if m.group("not") else "exists"))
            continue
        raise SelectorError(
            f"label selector requirement {part.strip()!r} is not one of key, !key, key=value, "
            "key!=value, key in (a,b), key notin (a,b), key>n, key<n"
        )
    return out


def matches(selector: Union[str, List[Requirement], None], labels: Optional[Mapping[str, str]]) -> bool:
    """Whether ``labels`` satisfy every requirement of ``selector``."""
    requirements = parse(selector) if selector is None or isinstance(selector, str) else selector
    labels = labels or {}
    return all(r.matches(labels) for r in requirements)


def from_mapping(labels: Mapping[str, str]) -> str:
    """``{"app": "db", "tier": "x"}`` as ``"app=db,tier=x"`` (every pair must match)."""
    return ",".join(f"{k}={v}" for k, v in labels.items())
