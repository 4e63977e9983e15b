"""Where a parallel branch stands, so that a branch cut short goes on instead of starting over.

The parallel handler names one progress file per branch
(``PARALLEL/branches/INDEX.progress.json``). After each node of the branch the
branch runner replaces it with the branch's traversal state and the node to run
next; a branch that starts and finds the file continues from there. So a branch
whose Ray worker died, or one interrupted with its run (``kill -9``, a timeout)
and resumed, runs none of its completed nodes again, and the node that was
running runs again from its start.

A durable store (the Ray executor's) also records how the branch ended and the
summary rows of its nodes, which a branch task hands back to its run: a task
retried after its result was lost returns that result without running anything.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from attractor.engine.state import NodeResult, Walk
from attractor.errors import InputFileError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import STATE_LIMIT, read_bounded
from attractor.fileio.writes import atomic_write_json, run_dir_mode
from attractor.handlers.base import BranchResult
from attractor.handlers.context import Context
from attractor.valueclass import mutable


@mutable
class Saved:
    """A branch's state as last saved: the node to run next, or how it ended."""

    walk: Walk
    next_node: str | None
    rows: list[NodeResult]
    result: BranchResult | None


class BranchProgress:
    """The progress file of one branch.

    ``rows`` is the list the branch's summary rows are appended to, kept in the
    file only when the branch hands its rows back (a Ray branch task); a local
    branch writes its rows to the run's results.jsonl itself.
    """

    def __init__(
        self, path: Path, *, durable: bool = False, rows: list[NodeResult] | None = None
    ) -> None:
        self.path = path
        self.durable = durable
        self.rows = rows
        self._folder_made = False

    def load(self, branch: str) -> Saved | None:
        """The saved state of ``branch``; None when there is none (or it is unreadable)."""
        if not os.path.lexists(self.path):  # a branch's first start: one look, no error made
            return None
        try:  # a FIFO or a huge file is refused without blocking, like damaged JSON
            text = read_bounded(self.path, STATE_LIMIT, "branch progress file")
            data = loads_json(text, self.path, "branch progress file")
            if data.get("branch") != branch:
                return None
            return _saved(data, branch)
        except (InputFileError, ValueError, TypeError, KeyError, AttributeError):
            return None

    def save(self, walk: Walk, next_node: str) -> None:
        """After a node of the branch: the state to continue from at ``next_node``."""
        self._write(walk, {"next_node": next_node})

    def finish(self, walk: Walk, result: BranchResult) -> None:
        """The branch ended with ``result`` (kept only by a durable store)."""
        if self.durable:
            self._write(walk, {"result": result.to_json()})

    def _write(self, walk: Walk, extra: dict[str, Any]) -> None:
        data: dict[str, Any] = {
            "branch": walk.branch,
            **extra,
            "completed": walk.completed,
            "statuses": walk.statuses,
            "visits": dict(walk.visits),
            "retries": walk.retries,
            "context": walk.context.live_values(),
            "logs": walk.context.logs,
        }
        if self.rows is not None:
            data["rows"] = [row.to_json() for row in self.rows]
        # Renamed into place: a process killed at any moment leaves the old state
        # or the new one. The Ray executor's workers may be lost with their
        # machine, so its store also reaches the disk before going on.
        if not self._folder_made:
            self.path.parent.mkdir(mode=run_dir_mode(), parents=True, exist_ok=True)
            self._folder_made = True
        atomic_write_json(self.path, data, fsync=self.durable)


def _saved(data: dict[str, Any], branch: str) -> Saved:
    context = Context(data["context"])
    context.logs = [str(entry) for entry in data.get("logs", [])]
    walk = Walk(
        context=context,
        completed=[str(n) for n in data["completed"]],
        statuses={str(k): str(v) for k, v in data["statuses"].items()},
        visits=Counter({str(k): int(v) for k, v in data["visits"].items()}),
        retries={str(k): int(v) for k, v in data["retries"].items()},
        branch=branch,
    )
    result = data.get("result")
    return Saved(
        walk=walk,
        next_node=data.get("next_node"),
        rows=[NodeResult.from_json(row) for row in data.get("rows", [])],
        result=BranchResult(**{k: str(v) for k, v in result.items()}) if result else None,
    )
