"""Log lines from a plugin into the host's structured logs.

Inside a component, lines go to the host through the contract's ``host-log`` import
(the host tags them with the plugin's name and bounds their volume). Outside one (unit
tests, the local harness) there is no host: lines are printed to stderr and kept, see
:func:`take_captured`.

    from syncweave_plugin import log
    log.debug(f"set label {key}")
"""

from __future__ import annotations

import sys
from typing import Callable, List, Optional, Tuple

LEVELS = ("trace", "debug", "info", "warn", "error")

_sink: Optional[Callable[[str, str], None]] = None
_captured: List[Tuple[str, str]] = []


def install_sink(sink: Optional[Callable[[str, str], None]]) -> None:
    """Routes lines to ``sink(level, message)``; the component adapter installs the
    host's ``host-log`` import here. ``None`` restores stderr and capture."""
    global _sink
    _sink = sink


def log(level: str, message: str) -> None:
    """Sends one line at ``level`` (trace, debug, info, warn or error)."""
    if level not in LEVELS:
        raise ValueError(f"unknown log level {level!r} (expected one of {', '.join(LEVELS)})")
    message = str(message)
    if _sink is not None:
        _sink(level, message)
        return
    _captured.append((level, message))
    print(f"[plugin {level}] {message}", file=sys.stderr)


def trace(message: str) -> None:
    log("trace", message)


def debug(message: str) -> None:
    log("debug", message)


def info(message: str) -> None:
    log("info", message)


def warn(message: str) -> None:
    log("warn", message)


def error(message: str) -> None:
    log("error", message)


def take_captured() -> List[Tuple[str, str]]:
    """The ``(level, message)`` lines logged outside a component since the last call."""
    out = list(_captured)
    _captured.clear()
    return out
