"""Spotting an agent that keeps making the same tool calls."""

from __future__ import annotations

import json
from collections import deque

from attractor.llm.types import ToolCall
from attractor.valueclass import frozen

DEFAULT_WINDOW = 10


@frozen
class LoopFound:
    """A repeating cycle: ``length`` calls repeated ``repeats`` times in the window."""

    length: int
    repeats: int


class LoopDetector:
    """Watches tool calls; reports when the last ``window`` calls form a short cycle.

    A cycle is a pattern of 1 to 3 calls (name and arguments) that repeats over
    the whole window. After a report the history is cleared, so the model gets a
    full window to change course before it is warned again.
    """

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        if window < 2:
            raise ValueError("window must be at least 2")
        self.window = window
        self._recent: deque[str] = deque(maxlen=window)

    def observe(self, call: ToolCall) -> LoopFound | None:
        """Record ``call``; return the loop it completes, if any."""
        self._recent.append(_signature(call))
        found = self._find()
        if found is not None:
            self._recent.clear()
        return found

    def _find(self) -> LoopFound | None:
        if len(self._recent) < self.window:
            return None
        calls = list(self._recent)
        for length in (1, 2, 3):
            # Need the cycle to occur at least twice to call it a loop.
            if length * 2 > self.window:
                break
            if all(calls[i] == calls[i - length] for i in range(length, len(calls))):
                return LoopFound(length, len(calls) // length)
        return None


def _signature(call: ToolCall) -> str:
    return call.name + json.dumps(call.arguments, sort_keys=True, default=str)
