"""The mutable state of a run: shared services (Run) and one traversal's progress (Walk)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from attractor.dot.graph import Graph
from attractor.engine.eventbus import EventBus
from attractor.engine.retry import BackoffConfig
from attractor.engine.step_budget import StepBudget
from attractor.events import CheckpointSaved, Event
from attractor.fileio.jsonio import dumps
from attractor.handlers.base import BranchRunner, Services
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.registry import HandlerRegistry
from attractor.llm.types import Usage
from attractor.run_status import RunStatus
from attractor.store.base import RowWriter, RunStore
from attractor.store.checkpoint import RUNNING, Checkpoint
from attractor.valueclass import mutable

if TYPE_CHECKING:
    from attractor.workspace.workspace import Workspace


class Bookkeeper(Protocol):
    """Keeps the main traversal's progress in the run store (``progress.py``)."""

    def record(self, run: Run, next_node: str | None) -> None: ...

    def snapshot(
        self, run: Run, next_node: str | None, status: RunStatus = RUNNING, reason: str = ""
    ) -> None: ...

    def note_spend(self, run: Run) -> None: ...

    def sync(self) -> None: ...

    def sync_later(self, path: Path) -> None: ...

    def close(self) -> None: ...


def _branches_here(run: Run, local: BranchRunner) -> BranchRunner:
    return local


@dataclass(slots=True)  # one a node run, kept for the summary: no __dict__ each
class NodeResult:
    """One row of the run summary: a node execution and how it ended."""

    node: str
    status: str
    attempts: int
    duration: float
    note: str
    usage: dict[str, Any] | None = None
    #: Which visit of the node this row ends; its last attempt's files are in NODE/, or in
    #: NODE/vVISIT-aATTEMPTS once a later attempt started (see store/attempts.py).
    visit: int = 1
    #: The workspace checkpoint after this stage, and how many files it changed
    #: (None: the run has no workspace).
    commit: str | None = None
    files: int | None = None

    def to_json(self) -> dict[str, Any]:
        # Written once a node: asdict() deep-copies field by field, several times the cost.
        data = {
            "node": self.node,
            "status": self.status,
            "attempts": self.attempts,
            "duration": self.duration,
            "note": self.note,
            "usage": dict(self.usage) if self.usage is not None else None,
            "visit": self.visit,
        }
        if self.commit is not None:
            data["commit"] = self.commit
            data["files"] = self.files
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeResult:
        """A row read back; raises KeyError, TypeError or ValueError for a damaged one."""
        usage = data.get("usage")
        if usage is not None and not isinstance(usage, dict):
            raise TypeError(f"usage must be an object or null, not {type(usage).__name__}")
        return cls(
            node=str(data["node"]),
            status=str(data["status"]),
            attempts=int(data["attempts"]),
            duration=float(data["duration"]),
            note=str(data.get("note") or ""),
            usage=usage,
            visit=int(data.get("visit", 1)),
            commit=str(data["commit"]) if data.get("commit") else None,
            files=int(data["files"]) if data.get("files") is not None else None,
        )


@mutable
class Walk:
    """One traversal: the main run, or one parallel branch with its context clone."""

    context: Context
    completed: list[str] = field(default_factory=list)
    #: Each node's last status (as text, as the checkpoint keeps it): all a walk keeps
    #: of an outcome once applied (see :attr:`outcomes`).
    statuses: dict[str, str] = field(default_factory=dict)
    visits: Counter[str] = field(default_factory=Counter)
    retries: dict[str, int] = field(default_factory=dict)
    #: None for the main traversal, else the branch id (its first node).
    branch: str | None = None
    #: The node running now (or last run), for the timeout message and checkpoint.
    current: str | None = None
    #: The node the walk enters next, set before it is entered: where a run stopped
    #: between two nodes goes on (``current`` then names the node that finished).
    pending: str | None = None
    #: A branch's progress keeper: called with the node to run next after each of
    #: its steps (the main traversal journals them instead).
    on_step: Callable[[Walk, str], None] | None = None
    #: When the node in progress was entered (None between nodes), and what the
    #: run had spent then: a run stopped inside it reports both in its summary.
    entered_at: float | None = None
    spent_at_entry: Usage = field(default_factory=Usage)
    #: A parallel branch's own worktree and the services that work in it (None: the run's).
    workspace: Workspace | None = None
    services: Services | None = None

    @property
    def outcomes(self) -> Mapping[str, Outcome]:
        """Each node's last outcome as goal gates read it: its status only, one shared
        :class:`Outcome` a status, so a long run does not hold every node's details."""
        return _StatusOutcomes(self.statuses)


#: The outcome a walk keeps of each status (:attr:`Walk.outcomes`).
_KEPT = {status.value: Outcome(status) for status in StageStatus}


class _StatusOutcomes(Mapping[str, Outcome]):
    """A read-only view of a walk's statuses as outcomes, in the order they were set."""

    __slots__ = ("_statuses",)

    def __init__(self, statuses: dict[str, str]) -> None:
        self._statuses = statuses

    def __getitem__(self, node_id: str) -> Outcome:
        return _KEPT[self._statuses[node_id]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._statuses)

    def __len__(self) -> int:
        return len(self._statuses)


@mutable
class Run:
    """Everything the traversal of one run directory shares."""

    graph: Graph
    #: Where the run is kept (a run directory: store/rundir.py), through the store's interface.
    run_dir: RunStore
    services: Services
    registry: HandlerRegistry
    bus: EventBus
    backoff: BackoffConfig
    main: Walk
    node_results: list[NodeResult] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    stage_index: int = 0
    manifest: dict[str, Any] = field(default_factory=dict)
    failure_reason: str = ""
    #: Set once the final checkpoint, manifest and event were written.
    finished: bool = False
    #: Summary rows appended to this run directory's results.jsonl.
    results_written: int = 0
    results_file: RowWriter | None = None
    #: Closed when the run finishes (the events.jsonl observer).
    closers: list[Callable[[], None]] = field(default_factory=list)
    #: The journal and checkpoint writer (None: a branch that keeps no journal).
    progress: Bookkeeper | None = None
    #: Where the branches of parallel nodes execute: the run executor's ``branches``
    #: (executor.py), given the run and the runner that runs them here.
    branches: Callable[[Run, BranchRunner], BranchRunner] = _branches_here
    #: What this run directory had spent before this process opened it (a resume).
    usage_before: Usage = field(default_factory=Usage)
    #: The shared run budget's ``spent`` when this process opened the directory (a
    #: child run or a loop_restart shares the budget of the run that started it).
    spent_at_open: Usage = field(default_factory=Usage)
    #: What the earlier directories of this run spent (a ``loop_restart`` goes on in
    #: a new directory): added to this one's for the run's result.
    carried: Usage = field(default_factory=Usage)
    #: The run-wide step budget (one object for a run and its loop_restart successors).
    steps: StepBudget = field(default_factory=StepBudget)
    #: The node this run directory's traversal starts (or continues) at.
    start: str | None = None
    #: The run's workspace (attractor.workspace); None with ``--workspace none``.
    workspace: Workspace | None = None

    def emit(self, event: Event) -> None:
        self.bus.emit(event)

    def __post_init__(self) -> None:
        # graph.is_exit scans every node; the loop asks twice per node.
        self._exits = self.graph.exit_ids()

    def is_exit(self, node_id: str) -> bool:
        return node_id in self._exits

    def add_result(self, result: NodeResult) -> None:
        """Keep a summary row in memory and in results.jsonl (flushed, not fsynced)."""
        self.node_results.append(result)
        if self.results_file is not None:
            self.results_file.write(dumps(result.to_json()) + "\n")
            self.results_written += 1

    def next_index(self) -> int:
        self.stage_index += 1
        return self.stage_index


def run_usage(run: Run) -> Usage:
    """Every token and dollar this run directory spent: each attempt of each node,
    its branches, subagents, child runs and agent CLIs, over every session of it.

    The one total the summary, manifest, checkpoint and listings show. It is
    counted where the spending is counted (the run budget, as each answer comes
    in), not from the summary rows, which hold each visit's attempts only.
    """
    return run.usage_before + run.services.run_budget.spent.beyond(run.spent_at_open)


def stopped_row(run: Run, status: str) -> NodeResult | None:
    """The summary row of the node a stop cut short (None when none was running).

    Not a row of results.jsonl: the node runs again from its start on resume.
    """
    main, node = run.main, run.main.current
    if node is None or main.entered_at is None:
        return None
    spent = run.services.run_budget.spent.beyond(main.spent_at_entry)
    return NodeResult(
        node=node,
        status="stopped",
        attempts=main.retries.get(node, 0) + 1,
        duration=time.monotonic() - main.entered_at,
        note=f"{status.replace('_', ' ')} while running; resume runs it again",
        usage=spent.to_json() if spent.total_tokens or spent.cost else None,
        visit=max(1, main.visits[node]),
    )


def sum_usage(results: list[NodeResult]) -> Usage:
    """Token usage and cost summed over node results (missing counts as zero).

    ``cost`` is present when at least one node had a price; nodes without one
    add nothing to it.
    """
    total: Usage = Usage()
    for result in results:
        if result.usage:  # most nodes ask no model
            total += Usage.from_json(result.usage)
    return total


def make_checkpoint(
    run: Run, next_node: str | None, status: RunStatus = RUNNING, *, live: bool = False
) -> Checkpoint:
    """A checkpoint of the main traversal; ``next_node`` is the node about to run.

    With ``live`` the checkpoint shares the run's lists and dicts instead of
    copying them: only for one that is written at once and then dropped.
    """
    main = run.main
    context = main.context.live_values() if live else main.context.snapshot()
    return Checkpoint(
        status=status,
        current_node=next_node if next_node is not None else main.current,
        next_node=next_node,
        completed_nodes=main.completed if live else list(main.completed),
        node_outcomes=main.statuses,
        node_retries=main.retries if live else dict(main.retries),
        node_visits=main.visits if live else dict(main.visits),
        context=context,
        logs=main.context.logs if live else list(main.context.logs),
        run_turns_used=run.services.run_budget.used,
        run_usage=run_usage(run).to_json(),
        node_results_count=run.results_written,
    )


def record_step(run: Run, next_node: str | None) -> None:
    """Journal the main traversal's progress; ``next_node`` is the node about to run."""
    if run.progress is not None:
        run.progress.record(run, next_node)


def save_checkpoint(
    run: Run, next_node: str | None, status: RunStatus = RUNNING, reason: str = ""
) -> None:
    """Write the whole checkpoint (durably) and announce it."""
    if run.progress is not None:
        run.progress.snapshot(run, next_node, status, reason)
    last = run.main.completed[-1] if run.main.completed else None
    run.emit(CheckpointSaved(node_id=last, phase="after" if status == RUNNING else status))
