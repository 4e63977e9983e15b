"""The run context: a key-value store shared by the stages of one run."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

#: Context keys a human gate sets when answered (the stage after it reads them):
#: the choice's key and label, the reviewer's comment and the gate's node id.
GATE_SELECTED_KEY = "human.gate.selected"
GATE_LABEL_KEY = "human.gate.label"
GATE_COMMENT_KEY = "human.gate.comment"
GATE_NODE_KEY = "human.gate.node"


class Context:
    """Key-value state passed between stages.

    The engine runs on one event loop, so no locking is needed; parallel branches
    each get an isolated :meth:`clone`.
    """

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})
        self.logs: list[str] = []

    def set(self, key: str, value: Any) -> None:
        self._values[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)

    def get_string(self, key: str, default: str = "") -> str:
        value = self._values.get(key)
        return default if value is None else str(value)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def apply(self, updates: Mapping[str, Any]) -> None:
        """Merge updates into the context."""
        self._values.update(updates)

    def append_log(self, entry: str) -> None:
        self.logs.append(entry)

    def live_values(self) -> dict[str, Any]:
        """The values themselves, not a copy: for a caller that only reads them at once
        (the checkpoint serialises them straight away instead of deep-copying)."""
        return self._values

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of all values (what a checkpoint stores)."""
        return {key: _copied(value) for key, value in self._values.items()}

    def clone(self) -> Context:
        """An isolated deep copy for a parallel branch."""
        twin = Context(self.snapshot())
        twin.logs = list(self.logs)
        return twin


#: Values shared as they are: nothing in them can change.
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def _copied(value: Any) -> Any:
    """A deep copy of a context value: the JSON shapes (what checkpoints hold) copied
    by hand, three times quicker than ``copy.deepcopy``; anything else by it."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    return copy.deepcopy(value)
