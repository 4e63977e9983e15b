"""The runs under a folder, each as a listing shows it: its manifest, read once.

``attractor runs``, the server's runs list and :mod:`attractor.runview.inventory`
(which adds each node's state) read a run's listing fields here: name, status,
timings, the node it is at, what it spent. A run whose driver died reads as
``stopped``, one whose files cannot be read as ``damaged``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from attractor.errors import AttractorError, InputFileError
from attractor.fileio.reads import (
    TEXT_LIMIT,
    read_bounded,
    read_head,
    read_lines,
)
from attractor.run_status import ListedStatus, RunStatus, SeenStatus, listed_status
from attractor.store.checkpoint import RUNNING, Checkpoint
from attractor.store.journal import damaged_run_file
from attractor.store.rundir import (
    CHECKPOINT,
    LOCK,
    MANIFEST,
    RESULTS,
    RunDir,
    source_hash,
)
from attractor.valueclass import mutable

#: Where runs go under a root (the engine's default, relative to the directory run in).
RUNS_SUBDIR = Path(".attractor") / "runs"


@mutable
class RunInfo:
    """A run as a listing shows it (manifest only)."""

    id: str
    path: Path
    name: str
    goal: str
    status: ListedStatus
    started_at: float | None
    finished_at: float | None
    duration: float | None
    current_node: str | None
    failure_reason: str
    #: Node executions finished so far (rows of results.jsonl).
    nodes_done: int = 0
    #: Input plus output tokens of the run so far, every attempt counted.
    tokens: int = 0
    #: US dollars spent so far, None when no model used had a price.
    cost: float | None = None
    #: The manifest's usage object (the checkpoint's while the run goes on): every
    #: count (input, output, cached...) and the cost; None before anything is recorded.
    usage: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["path"] = str(self.path)
        return data


def is_run_dir(path: Path) -> bool:
    return (path / MANIFEST).is_file() or (path / CHECKPOINT).is_file()


def list_runs(root: Path, *, top: bool = True) -> list[RunInfo]:
    """Every run under ``root/.attractor/runs`` (and, with ``top``, right in ``root``:
    ``attractor runs`` given the runs' own folder), newest first."""
    found: list[RunInfo] = []
    for base in (root / RUNS_SUBDIR, root) if top else (root / RUNS_SUBDIR,):
        with contextlib.suppress(OSError):
            for entry in os.scandir(base):
                path = Path(entry.path)
                if entry.is_dir(follow_symlinks=False) and is_run_dir(path):
                    found.append(run_info(path))
    found.sort(key=lambda r: (r.started_at or 0.0, r.id), reverse=True)
    return found


#: Every status a listing can show: a run's own, and the reader's words for a run
#: whose driver died (``stopped``) or whose files cannot be read (``damaged``).
LISTED_STATUSES = (*(str(s) for s in RunStatus), *(str(s) for s in SeenStatus))


def select_runs(
    runs: Iterable[RunInfo], statuses: Iterable[str] = (), pipeline: str | None = None
) -> list[RunInfo]:
    """The runs with one of ``statuses`` (all when none) whose pipeline is ``pipeline``
    (a name, or a shell pattern like ``nightly-*``; all when None)."""
    wanted = frozenset(statuses)
    return [
        run
        for run in runs
        if (not wanted or run.status in wanted)
        and (pipeline is None or fnmatch.fnmatchcase(run.name, pipeline))
    ]


def run_status(path: Path) -> ListedStatus:
    """The run's status as :func:`run_info` gives it, reading only the manifest and lock.

    For pollers (an event stream waiting for the next event): no checkpoint is
    parsed and no results are counted. A damaged manifest reads as ``damaged``.
    """
    try:
        status = listed_status(RunDir(path).read_manifest().get("status"))
    except AttractorError:
        return SeenStatus.DAMAGED
    if status == RUNNING and not driver_alive(path):
        return SeenStatus.STOPPED
    return status


def run_info(path: Path) -> RunInfo:
    """The manifest of the run in ``path``; a driver that died leaves ``stopped``.

    A manifest or results.jsonl that cannot be read (not a regular file, over
    its limit, nested too deeply) leaves status ``damaged`` with the reason.
    """
    damage = ""
    try:
        manifest = RunDir(path).read_manifest()
    except AttractorError as exc:
        manifest, damage = {}, str(exc)
    nodes_done, problem = _line_count(path / RESULTS)
    damage = damage or problem
    status = SeenStatus.DAMAGED if damage else listed_status(manifest.get("status"))
    usage = manifest.get("usage")
    current = _text_or_none(manifest.get("current_node"))
    if status == RUNNING:
        # The manifest is written when a run starts and ends: a run still going,
        # or one whose driver died, has its node and its spending so far in the
        # checkpoint (with the journal records after it).
        checkpoint = load_checkpoint(path)
        if checkpoint is not None:
            current = checkpoint.current_node or checkpoint.next_node
            if checkpoint.run_usage is not None:
                usage = checkpoint.run_usage
        if not driver_alive(path):
            status = SeenStatus.STOPPED
    return RunInfo(
        id=path.name,
        path=path,
        name=str(manifest.get("name") or path.name),
        goal=str(manifest.get("goal") or ""),
        status=status,
        started_at=_number(manifest.get("started_at")),
        finished_at=_number(manifest.get("finished_at")),
        duration=run_seconds(manifest),
        current_node=current,
        failure_reason=damage or str(manifest.get("failure_reason") or ""),
        nodes_done=nodes_done,
        tokens=_tokens(usage),
        cost=_cost(usage),
        usage=dict(usage) if isinstance(usage, dict) else None,
    )


def pipeline_digest(path: Path) -> str | None:
    """The SHA-256 of the pipeline text the run in ``path`` ran: the manifest's
    ``source_sha256``, else (an older manifest) its copy's; None when neither is there."""
    try:
        recorded = RunDir(path).read_manifest().get("source_sha256")
    except AttractorError:
        recorded = None
    if isinstance(recorded, str) and recorded:
        return recorded
    try:
        return source_hash(read_bounded(RunDir(path).pipeline_path, TEXT_LIMIT, "pipeline copy"))
    except InputFileError:
        return None


def _line_count(path: Path) -> tuple[int, str]:
    """How many whole lines ``path`` holds, and why it cannot be read ("" when it can)."""
    count = 0
    try:
        for _ in read_lines(path, "results file"):
            count += 1
    except InputFileError as exc:
        return 0, "" if exc.kind == "os" else str(damaged_run_file(exc))
    return count, ""


def _tokens(usage: object) -> int:
    if not isinstance(usage, dict):
        return 0
    counts = (usage.get("input_tokens"), usage.get("output_tokens"))
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool))


def _cost(usage: object) -> float | None:
    return _number(usage.get("cost")) if isinstance(usage, dict) else None


def driver_alive(path: Path) -> bool:
    """Whether the process that last locked the run directory still exists."""
    try:
        pid = int(read_head(path / LOCK, 64, "lock file").strip() or b"0")
    except (InputFileError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def load_checkpoint(path: Path) -> Checkpoint | None:
    """The run's checkpoint, None before the first one is written or when damaged."""
    try:
        return Checkpoint.load(RunDir(path).checkpoint_path)
    except AttractorError:
        return None


def run_seconds(manifest: dict[str, Any]) -> float | None:
    """How long a run has run, every session of it (a resumed run's ``duration`` is
    its last session's; ``active_seconds`` adds those before)."""
    total = _number(manifest.get("active_seconds"))
    return total if total is not None else _number(manifest.get("duration"))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
