"""The per-node record of what the agent did: transcript.jsonl and reflections.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from attractor.fileio.writes import append_text, run_dir_mode
from attractor.llm.types import ModelResponse

TurnKind = Literal["work", "reflection", "final"]


class Transcript:
    """Appends one JSON line per model request, and each reflection, under ``stage_dir``.

    Retries and loop re-entries of a node share its directory, so each line also
    says which ``visit`` and ``attempt`` of the node it belongs to.
    """

    def __init__(self, stage_dir: Path, *, visit: int = 1, attempt: int = 1) -> None:
        stage_dir.mkdir(mode=run_dir_mode(), parents=True, exist_ok=True)
        self.visit = visit
        self.attempt = attempt
        self.path = stage_dir / "transcript.jsonl"
        self.reflections_path = stage_dir / "reflections.md"
        self.tools_log_path = stage_dir / "tools.log"

    def record(
        self,
        *,
        turn: int,
        kind: TurnKind,
        tools_offered: list[str],
        response: ModelResponse,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Append the line of one model request.

        ``extra`` adds what happened before the request: ``project_context`` (the
        instruction files read, on the first line), ``steering`` (messages a host
        injected) and ``compacted`` (tool outputs dropped to fit the context window).
        """
        line: dict[str, Any] = {
            "turn": turn,
            "kind": kind,
            "tools_offered": tools_offered,
            "text": response.text,
            "tool_calls": [call.to_json() for call in response.tool_calls],
            "visit": self.visit,
            "attempt": self.attempt,
        }
        if response.usage is not None:
            line["usage"] = response.usage.to_json()
        line.update(extra or {})
        self._append(self.path, json.dumps(line, ensure_ascii=False) + "\n")

    def reflection(self, *, turn: int, used: int, remaining: int, text: str) -> None:
        """Append one reflection to reflections.md."""
        where = f"visit {self.visit}, attempt {self.attempt}"
        entry = f"## Reflection at turn {turn} ({used} used, {remaining} remaining; {where})\n\n"
        entry += f"{text}\n\n"
        self._append(self.reflections_path, entry)

    def tool_output(self, *, turn: int, name: str, arguments: dict[str, Any], output: str) -> None:
        """Append the full, untruncated output of one tool call to tools.log."""
        args = json.dumps(arguments, ensure_ascii=False)
        self._append(self.tools_log_path, f"--- turn {turn}: {name} {args}\n{output}\n")

    @staticmethod
    def _append(path: Path, text: str) -> None:
        append_text(path, text)
