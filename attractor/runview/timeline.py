"""A run's history, one row per node attempt, what each stage spent, and what a resume would do.

Read from ``events.jsonl`` (every attempt, its outcome, duration and the tokens
of its model turns), ``results.jsonl`` (what each finished visit of a node
spent, every attempt counted) and the checkpoint (where a resume would start),
through :mod:`attractor.runview.inventory`.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from attractor.errors import AttractorError, InputFileError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import TEXT_LIMIT, read_bounded
from attractor.run_status import RESUMABLE, RunStatus, SeenStatus
from attractor.runview.inventory import read_events, stage_path
from attractor.runview.listing import load_checkpoint, run_info, run_status
from attractor.store.attempts import files_of
from attractor.store.rundir import CHECKPOINT, RunDir
from attractor.valueclass import mutable


@mutable
class Attempt:
    """One attempt of one visit of a node."""

    node: str
    visit: int
    attempt: int
    status: str = "running"
    started: float | None = None
    duration: float | None = None
    tokens: int = 0
    #: The edge label the node chose, else the node the run went to next.
    route: str = ""
    note: str = ""
    #: The node's folder, relative to the run directory.
    files: str = ""
    #: How many files the attempt changed in the run's workspace (None: not recorded).
    changed: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def timeline(path: Path) -> list[Attempt]:
    """Every node attempt of the run in ``path``, in the order they started."""
    rows: list[Attempt] = []
    open_rows: dict[str, Attempt] = {}
    visits: Counter[str] = Counter()
    #: How often each (node, visit, attempt) started: an attempt a stop cut short
    #: runs again on resume under the same numbers.
    runs: Counter[tuple[str, int, int]] = Counter()
    last: float | None = None  # when the last event was written
    for _, event in read_events(path):
        kind = event.get("type")
        if kind == "pipeline_started":  # a resume: what still ran was stopped before it
            _stopped(rows, last)
        last = _ts(event) or last
        if kind == "stage_started":
            name = str(event.get("name"))
            attempt = _count(event.get("attempt"), 1)
            visit = _visit(event, visits, name, attempt)
            if rows and rows[-1].status != "running" and not rows[-1].route:
                rows[-1].route = f"-> {name}"
            runs[name, visit, attempt] += 1
            folder = files_of(stage_path(path, name), visit, attempt, runs[name, visit, attempt])
            files = folder.relative_to(path).as_posix()
            row = Attempt(name, visit, attempt, started=_ts(event), files=files)
            rows.append(row)
            open_rows[name] = row
        elif kind in ("stage_completed", "stage_failed", "stage_retrying"):
            closing = open_rows.get(str(event.get("name")))
            if closing is not None and closing.status == "running":
                _close(closing, event)
        elif kind == "agent_turn_completed":
            turn_of = open_rows.get(str(event.get("node")))
            if turn_of is not None:
                used = _count(event.get("input_tokens"), 0) + _count(event.get("output_tokens"), 0)
                turn_of.tokens += used
    if not _live(path):
        _stopped(rows, last)
    for row in rows:
        if row.status != "running":
            row.changed = _files_changed(path / row.files)
    return _with_unattempted(path, rows)


def _stopped(rows: list[Attempt], at: float | None) -> None:
    """Mark the attempts still running as stopped at ``at`` (the session's last event)."""
    for row in rows:
        if row.status == "running":
            row.status = "stopped"
            if row.started is not None and at is not None:
                row.duration = max(0.0, at - row.started)


def _with_unattempted(path: Path, rows: list[Attempt]) -> list[Attempt]:
    """``rows`` with the visits that ran no attempt (over ``max_visits``: they failed
    on entry, no stage event says so) where results.jsonl has them."""
    try:
        results = RunDir(path).read_results(1 << 62)
    except AttractorError:
        return rows
    if not any(_count(r.get("attempts"), 1) == 0 for r in results):
        return rows
    merged = list(rows)
    after = -1  # where the last visit results.jsonl named ends among the rows
    for result in results:
        node, visit = str(result.get("node", "?")), _count(result.get("visit"), 1)
        if _count(result.get("attempts"), 1) > 0:
            ends = [i for i, r in enumerate(merged) if (r.node, r.visit) == (node, visit)]
            after = ends[-1] if ends else after
            continue
        if after >= 0 and not merged[after].route:
            merged[after].route = f"-> {node}"
        row = Attempt(node, visit, 0, status=str(result.get("status", "fail")))
        row.note = str(result.get("note", ""))
        if isinstance(result.get("duration"), int | float):
            row.duration = float(result["duration"])
        after += 1
        merged.insert(after, row)
    return merged


def _files_changed(folder: Path) -> int | None:
    """The number of files the attempt in ``folder`` changed, from its status file."""
    for name in ("status.engine.json", "status.json"):
        path = folder / name
        try:  # bounded and refusing a FIFO or a device: the run directory may be damaged
            data = loads_json(read_bounded(path, TEXT_LIMIT, "status file"), path, "status file")
        except (InputFileError, ValueError):
            continue
        changed = data.get("files_changed") if isinstance(data, dict) else None
        if isinstance(changed, list):
            return len(changed)
        if isinstance(data, dict) and data.get("commit"):
            return 0
    return None


@mutable
class Spend:
    """Tokens and cost: input (cached input included), of it cached, output; dollars."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    #: None when no model used had a price.
    cost: float | None = None

    @classmethod
    def of(cls, usage: object) -> Spend:
        """A usage object as the manifest and results.jsonl write it (damaged counts read 0)."""
        if not isinstance(usage, dict):
            return cls()
        cost = usage.get("cost")
        priced = isinstance(cost, int | float) and not isinstance(cost, bool)
        return cls(
            _count(usage.get("input_tokens"), 0),
            _count(usage.get("output_tokens"), 0),
            _count(usage.get("cache_read_tokens"), 0),
            float(cost) if priced else None,  # type: ignore[arg-type]
        )

    def __add__(self, other: Spend) -> Spend:
        costs = [c for c in (self.cost, other.cost) if c is not None]
        return Spend(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            sum(costs) if costs else None,
        )

    def __sub__(self, other: Spend) -> Spend:
        cost = None
        if self.cost is not None:
            cost = self.cost - (other.cost or 0.0)
        return Spend(
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cached_tokens - other.cached_tokens,
            cost,
        )

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@mutable
class StageSpend:
    """What one finished visit of a node spent, every attempt of it counted."""

    node: str
    visit: int
    attempts: int
    spend: Spend

    def to_json(self) -> dict[str, Any]:
        return {**dict(self.__dict__), "spend": self.spend.to_json()}


def stage_spending(path: Path) -> list[StageSpend]:
    """Each finished visit that used a model, in the order they finished (results.jsonl).

    Their sum is the run's usage (the manifest's) once no stage is running or was
    cut short by a stop.
    """
    try:
        rows = RunDir(path).read_results(1 << 62)
    except AttractorError:
        return []
    found = []
    for row in rows:
        if isinstance(row.get("usage"), dict):
            node = str(row.get("node", "?"))
            visit, attempts = _count(row.get("visit"), 1), _count(row.get("attempts"), 1)
            found.append(StageSpend(node, visit, attempts, Spend.of(row["usage"])))
    return found


def attempt_folder(path: Path, node: str, visit: int, attempt: int, run: int = 1) -> Path:
    """Where one attempt of a node keeps its files in the run directory ``path``.

    ``run`` counts the starts of the same visit and attempt (a stop cut one
    short, and resume ran it again).
    """
    return files_of(stage_path(path, node), visit, attempt, run)


def _visit(event: dict[str, Any], visits: Counter[str], name: str, attempt: int) -> int:
    """The visit the event names; counted from first attempts for events that name none."""
    recorded = event.get("visit")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
        visits[name] = max(visits[name], recorded)
        return recorded
    if attempt == 1:
        visits[name] += 1
    return visits[name]


def _close(row: Attempt, event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "stage_completed":
        row.status = str(event.get("status", "success"))
        row.note = str(event.get("notes", ""))
        label = str(event.get("preferred_label") or "")
        row.route = f"chose {label}" if label else ""
    else:
        retry = kind == "stage_retrying" or bool(event.get("will_retry"))
        row.status = "retry" if retry else "fail"
        row.note = str(event.get("error", ""))
    started = row.started
    if isinstance(event.get("duration"), int | float):
        row.duration = float(event["duration"])
    elif started is not None and _ts(event) is not None:
        row.duration = max(0.0, (_ts(event) or 0.0) - started)


def _count(value: Any, default: int) -> int:
    """A count an event carries; a damaged value (text, a list...) reads as ``default``."""
    return value if type(value) is int else default


def _ts(event: dict[str, Any]) -> float | None:
    value = event.get("ts")
    return float(value) if isinstance(value, int | float) else None


def _live(path: Path) -> bool:
    return run_status(path) == RunStatus.RUNNING


def next_action(path: Path) -> str:
    """What ``attractor resume`` would do with the run in ``path``, in one sentence."""
    info = run_info(path)
    checkpoint = load_checkpoint(path)
    if info.status == RunStatus.RUNNING:
        return "the run is still running (another attractor process drives it)"
    if checkpoint is None and os.path.lexists(path / CHECKPOINT):
        why = f"attractor resume {path} says why"
        return f"nothing to resume: its checkpoint cannot be read ({why})"
    if checkpoint is None:
        return "nothing to resume: the run stopped before its first checkpoint; start it again"
    resumable = info.status == SeenStatus.STOPPED or checkpoint.status in RESUMABLE
    if resumable:
        node = checkpoint.current_node or checkpoint.next_node
        done = len(checkpoint.completed_nodes)
        return (
            f"attractor resume {path} runs {node} again from its start and goes on "
            f"({done} completed node executions are kept)"
        )
    if checkpoint.status == RunStatus.SUCCESS:
        return "nothing to resume: the run succeeded"
    where = f" at {checkpoint.current_node}" if checkpoint.current_node else ""
    return f"nothing to resume: the run ended {checkpoint.status}{where}"
