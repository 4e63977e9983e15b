"""Checkpoints: the state a run needs to continue after it stopped or crashed.

The engine writes one checkpoint between consecutive nodes. It is both the
"after" of the node that finished and the "before" of the next one: it lists
the completed nodes and names the node about to run (``next_node``). A run that
stops while a node is running is resumed by running that node again from its
start; completed nodes never run again.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attractor.errors import CheckpointError
from attractor.pipeline.rundir import atomic_write_text

VERSION = 1

#: Run statuses a checkpoint may record.
RUNNING = "running"
FINAL_STATUSES = ("success", "fail", "restarted")


@dataclass
class Checkpoint:
    """A JSON-serialisable snapshot of one run's progress."""

    status: str = RUNNING
    #: The node running when the checkpoint was written, else the last completed one.
    current_node: str | None = None
    #: The node to run when the run continues (None once the run is finished).
    next_node: str | None = None
    completed_nodes: list[str] = field(default_factory=list)
    #: Last status of each completed node (goal gates need it on resume).
    node_outcomes: dict[str, str] = field(default_factory=dict)
    node_retries: dict[str, int] = field(default_factory=dict)
    node_visits: dict[str, int] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    run_turns_used: int = 0
    #: How many summary rows of results.jsonl belong to this checkpoint.
    node_results_count: int = 0
    failure_reason: str = ""
    timestamp: float = field(default_factory=time.time)
    version: int = VERSION

    def to_json(self) -> dict[str, Any]:
        # A shallow dict: asdict() deep-copies, which costs more than the write.
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def save(self, path: Path) -> None:
        """Write atomically (temp file, fsync, rename) as compact JSON."""
        self.timestamp = time.time()
        text = json.dumps(self.to_json(), separators=(",", ":"), default=str)
        atomic_write_text(path, text + "\n")

    @classmethod
    def load(cls, path: Path) -> Checkpoint:
        """Read ``path``; raises CheckpointError with what went wrong and what to do."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CheckpointError(
                f"{path}: no checkpoint found; is this a run directory of attractor run?"
            ) from None
        except OSError as exc:
            raise CheckpointError(f"{path}: cannot read checkpoint: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CheckpointError(f"{path}: checkpoint is not valid JSON ({exc})") from None
        return cls.from_json(data, path)

    @classmethod
    def from_json(cls, data: Any, path: Path) -> Checkpoint:
        if not isinstance(data, dict):
            raise CheckpointError(f"{path}: checkpoint must be a JSON object")
        if data.get("version") != VERSION:
            raise CheckpointError(
                f"{path}: checkpoint version {data.get('version')!r} is not supported "
                f"(expected {VERSION}); start a new run"
            )
        known = set(cls.__dataclass_fields__)
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:
            raise CheckpointError(f"{path}: malformed checkpoint: {exc}") from None
