"""Small builders shared by the agent tests (real objects, no mocks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attractor.events import Event
from attractor.llm.scripted import ScriptedModel, ScriptedResponse


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> tuple[tuple[str, dict[str, Any]], ...]:
    return tuple(calls)


def looping_model(then: str = "repeat_last") -> ScriptedModel:
    """A model that lists the directory forever: it never stops by itself."""
    return ScriptedModel(
        [ScriptedResponse("looking around", (("list_dir", {"path": "."}),))],
        then="repeat_last" if then == "repeat_last" else "stop",
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class Recorder:
    """Collects emitted events."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]
