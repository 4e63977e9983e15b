"""Durable bookkeeping of the main traversal: journal records and full checkpoints.

After each step the engine calls :meth:`Progress.record`, which appends what
changed since the previous record to ``journal.jsonl`` (O(1) bytes a node, no
fsync). :meth:`Progress.snapshot` writes the whole ``checkpoint.json``: when
the run opens, every :data:`SNAPSHOT_SECONDS` while it goes (so a reader has
little journal to apply) and when it stops. A checkpoint costs time in
proportion to the run so far, so a long run spaces them out further: the next
one waits at least :data:`SNAPSHOT_SHARE` times as long as the last one took,
which keeps their share of the run's time, and so the cost per node, bounded
however many nodes ran. :meth:`Progress.sync` is the
fdatasync the engine calls before a node with side effects starts. See
:mod:`attractor.store.journal` for the format and the guarantees.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.engine.state import Run, Walk, make_checkpoint, run_usage
from attractor.events import CheckpointSaved
from attractor.handlers.context import Context
from attractor.run_status import RunStatus
from attractor.store.checkpoint import RUNNING

if TYPE_CHECKING:
    from attractor.agent.run_budget import RunTurnBudget
    from attractor.store.base import RunStore

#: How often (seconds) a running run rewrites the whole checkpoint.json.
SNAPSHOT_SECONDS = 2.0
#: A running run spends at most about 1/SNAPSHOT_SHARE of its time writing checkpoints.
SNAPSHOT_SHARE = 50
#: The context key of the workspace checkpoint (engine/workspace_hooks.py).
WORKSPACE_COMMIT = "internal.workspace.commit"
#: Handler types that change nothing outside the run directory.
PURE_HANDLERS = frozenset({"start", "exit", "conditional", "parallel.fan_in"})


class TrackedContext(Context):
    """The main traversal's context: remembers which keys were set since the last record."""

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        super().__init__(values)
        self.changed: set[str] = set()

    def set(self, key: str, value: Any) -> None:
        super().set(key, value)
        self.changed.add(key)

    def apply(self, updates: Mapping[str, Any]) -> None:
        super().apply(updates)
        self.changed.update(updates)


class _Shadow:
    """What the journal (with the checkpoint before it) says so far: deltas are taken against it."""

    def __init__(self, walk: Walk, turns: int, results: int) -> None:
        self.completed = len(walk.completed)
        self.statuses = dict(walk.statuses)
        self.visits = dict(walk.visits)
        self.retries = dict(walk.retries)
        self.logs = len(walk.context.logs)
        self.turns = turns
        self.results = results
        #: The run budget's ``spent`` as last recorded (a new object at each spend).
        self.spent: object = None


def _changed(now: Mapping[str, Any], seen: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """Entries of ``now`` among ``keys`` that differ from ``seen`` (which is brought up to date)."""
    delta = {}
    for key in keys:
        if key in now and (key not in seen or seen[key] != now[key]):
            delta[key] = seen[key] = now[key]
    return delta


class Progress:
    """The journal and checkpoint writer of one run directory."""

    def __init__(
        self, store: RunStore, main: Walk, budget: RunTurnBudget, results: int, seq: int = 0
    ) -> None:
        """Keeps the progress of ``main`` in ``store`` after record ``seq``, which holds
        ``results`` summary rows and ``budget``'s spending so far."""
        self.journal = store.open_journal(seq)
        self._shadow = _Shadow(main, budget.used, results)
        self._shadow.spent = budget.spent
        self._snapshot_at = time.monotonic()
        #: Seconds until the next periodic checkpoint (grows with the checkpoint's cost).
        self._interval = SNAPSHOT_SECONDS
        #: Files written since the last barrier that it must make durable (see sync_later).
        self._unsynced: dict[Path, None] = {}
        #: ``next`` and ``current`` of the last record (a spend-only record repeats them).
        self._where: tuple[str | None, str | None] = (None, main.current)

    def record(self, run: Run, next_node: str | None) -> None:
        """Append the changes of the main traversal since the previous record."""
        main = run.main
        record = self._delta(run, main)
        record["next"] = next_node
        record["current"] = next_node if next_node is not None else main.current
        self._where = (record["next"], record["current"])
        self.journal.append(record)
        # What the files stood for (a finished branch of the node that just ended) is
        # now in the journal, which the next barrier syncs.
        self._unsynced.clear()
        last = main.completed[-1] if main.completed else None
        run.emit(CheckpointSaved(node_id=last, phase="after"))
        if time.monotonic() - self._snapshot_at >= self._interval:
            self.snapshot(run, next_node)

    def note_spend(self, run: Run) -> None:
        """Journal the run's total spend if it changed (a parallel branch's node ended).

        The main traversal is still inside its node: the record repeats where it
        stands, so a resume after a crash continues as before and forgets no spend.
        """
        record: dict[str, Any] = {}
        self._spend(run, record)
        if record:
            record["next"], record["current"] = self._where
            self.journal.append(record)

    def _delta(self, run: Run, main: Walk) -> dict[str, Any]:
        shadow = self._shadow
        done = main.completed[shadow.completed :]
        shadow.completed = len(main.completed)
        keys = list(dict.fromkeys([*done, *([main.current] if main.current else [])]))
        record: dict[str, Any] = {}
        if done:
            record["done"] = [[node, main.visits.get(node, 0)] for node in done]
        for name, now, seen in (
            ("status", main.statuses, shadow.statuses),
            ("visits", main.visits, shadow.visits),
            ("retries", main.retries, shadow.retries),
        ):
            delta = _changed(now, seen, keys)
            if delta:
                record[name] = delta
        context = _context_delta(main.context)
        if context:
            record["context"] = context
            if WORKSPACE_COMMIT in context:  # the stage's checkpoint, easy to find
                record["commit"] = context[WORKSPACE_COMMIT]
        logs = main.context.logs
        if len(logs) != shadow.logs:
            record["logs"] = logs[shadow.logs :]
            shadow.logs = len(logs)
        self._counters(run, record)
        return record

    def _counters(self, run: Run, record: dict[str, Any]) -> None:
        shadow = self._shadow
        if run.services.run_budget.used != shadow.turns:
            record["turns"] = shadow.turns = run.services.run_budget.used
        if run.results_written != shadow.results:
            record["results"] = shadow.results = run.results_written
        self._spend(run, record)

    def _spend(self, run: Run, record: dict[str, Any]) -> None:
        shadow = self._shadow
        spent = run.services.run_budget.spent
        if spent is not shadow.spent:
            shadow.spent = spent
            record["usage"] = run_usage(run).to_json()

    def snapshot(
        self, run: Run, next_node: str | None, status: RunStatus = RUNNING, reason: str = ""
    ) -> None:
        """Write the whole checkpoint.json (after syncing the journal it points into)."""
        started = time.monotonic()
        # The checkpoint holds everything recorded so far: the next record starts a new delta.
        self._delta(run, run.main)
        self.sync()
        checkpoint = make_checkpoint(run, next_node, status, live=True)
        self._where = (next_node, checkpoint.current_node)
        checkpoint.failure_reason = reason
        checkpoint.journal_seq = self.journal.seq
        checkpoint.journal_offset = self.journal.offset
        run.run_dir.save_checkpoint(checkpoint)
        self._snapshot_at = time.monotonic()
        self._interval = max(SNAPSHOT_SECONDS, (self._snapshot_at - started) * SNAPSHOT_SHARE)

    def sync(self) -> None:
        """Make every record so far durable: called before a node with side effects starts."""
        if self._unsynced:
            _sync_files(list(self._unsynced))
            self._unsynced.clear()
        self.journal.sync()

    def sync_later(self, path: Path) -> None:
        """Make ``path`` durable at the next barrier, unless a record supersedes it first.

        For files such as a parallel node's finished branches: fsyncing each as it
        is written would stop the event loop once per branch.
        """
        self._unsynced[path] = None

    def close(self) -> None:
        self.journal.close()


def _sync_files(paths: list[Path]) -> None:
    """fdatasync each file, then fsync each folder once (for the renames that made them)."""
    for path in [*paths, *dict.fromkeys(p.parent for p in paths)]:
        try:
            # O_NONBLOCK: a FIFO swapped in for a stage file must not block the run.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # moved aside since (a later attempt): nothing left to keep
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)


def _context_delta(context: Context) -> dict[str, Any]:
    values = context.live_values()
    if not isinstance(context, TrackedContext):
        return dict(values)  # not tracked: every value, still correct
    changed = context.changed
    if not changed:
        return {}
    delta = {key: values[key] for key in changed if key in values}
    changed.clear()
    return delta


def has_side_effects(handler_type: str, backend: object) -> bool:
    """Whether a node of ``handler_type`` may act outside the run directory.

    A codergen node acts through the backend unless the backend says it does
    not (the simulate backend); unknown handler types are assumed to.
    """
    if handler_type in PURE_HANDLERS:
        return False
    if handler_type == "codergen":
        return bool(getattr(backend, "side_effects", True))
    return True
