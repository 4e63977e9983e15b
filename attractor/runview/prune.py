"""Deleting runs that are over: their run directories, then their workspaces.

The one place a run is deleted, for the web page (``POST /pipelines/prune``)
and ``attractor runs --prune --older-than``. A run still going (its driver
holds the lock and lives, or the caller says it drives it) is never deleted;
nor is anything that is not a run directory. A worktree run's worktrees and
branches (``attractor/RUN_ID``, ``attractor/RUN_ID--*``) live in the user's
repository: once the run directory is gone, :func:`forget_workspaces` removes
them (:mod:`attractor.workspace.prune`). A snapshot run keeps its git
directory inside its run directory, so deleting that is enough.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import field
from pathlib import Path

import anyio

from attractor.errors import AttractorError
from attractor.run_status import RunStatus
from attractor.runview.listing import RunInfo, driver_alive, is_run_dir, run_status
from attractor.store.rundir import RunDir
from attractor.valueclass import mutable
from attractor.workspace.prune import prune as prune_workspaces

#: Why a run still going is kept.
STILL_GOING = "the run is still going; cancel it first"


@mutable
class Deleted:
    """What a prune deleted (run ids), kept (run id: why) and whose workspaces it removed."""

    deleted: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)
    workspaces: list[str] = field(default_factory=list)


def delete_run(path: Path, active: bool = False) -> str:
    """Delete the run directory ``path``; "" when done, else why it was kept.

    ``active``: the caller drives the run (a server's own run), so it is going.
    """
    if active or (run_status(path) == RunStatus.RUNNING and driver_alive(path)):
        return STILL_GOING
    if path.is_symlink() or not path.is_dir() or not is_run_dir(path):
        return "not a run directory"
    try:
        shutil.rmtree(path)
    except OSError as exc:
        return f"cannot delete it: {exc.strerror or exc}"
    return ""


def workspace_repo(path: Path) -> tuple[Path, str] | None:
    """The repository holding the worktree and branches of the run in ``path``, and the
    run's id there (None: a snapshot run, a run without a workspace, or a manifest that
    cannot be read)."""
    try:
        record = RunDir(path).read_manifest().get("workspace")
    except AttractorError:
        return None
    if not isinstance(record, dict) or record.get("mode") != "worktree":
        return None
    repo = record.get("repo") or record.get("common_dir")
    run_id = record.get("run_id") or path.name
    return (Path(str(repo)), str(run_id)) if repo else None


async def delete_runs(
    runs: Iterable[tuple[str, Path, bool]], limiter: anyio.CapacityLimiter | None = None
) -> Deleted:
    """Delete each run (its id, its directory, whether the caller drives it: see
    :func:`delete_run`), then the worktrees and branches of those deleted; the file work
    in worker threads, at most ``limiter`` at once (default: anyio's own limit)."""
    done = Deleted()
    repos: list[tuple[Path, str]] = []
    for run_id, path, active in runs:
        repo, why = await anyio.to_thread.run_sync(_delete_one, path, active, limiter=limiter)
        if why:
            done.kept[run_id] = why
            continue
        done.deleted.append(run_id)
        repos += [repo] if repo is not None else []
    done.workspaces = await forget_workspaces(repos)
    return done


def _delete_one(path: Path, active: bool) -> tuple[tuple[Path, str] | None, str]:
    """The run's workspace (read before its manifest goes), and why it was kept ('')."""
    repo = workspace_repo(path)
    return repo, delete_run(path, active)


async def forget_workspaces(deleted: Iterable[tuple[Path, str]]) -> list[str]:
    """Remove the worktrees and branches of these deleted runs (repository, run id) from
    their repositories, and nothing of any other run; the run ids whose workspaces went."""
    by_repo: dict[Path, set[str]] = {}
    for repo, run_id in deleted:
        by_repo.setdefault(repo, set()).add(run_id)
    removed: list[str] = []
    for repo, ids in by_repo.items():
        if repo.is_dir():
            removed += (await prune_workspaces(repo, only=ids)).removed
    return removed


def ended_at(run: RunInfo) -> float:
    """When the run ended (else started, else its directory last changed): its age's origin."""
    if run.finished_at is not None:
        return run.finished_at
    if run.started_at is not None:
        return run.started_at
    try:
        return os.stat(run.path).st_mtime
    except OSError:
        return time.time()


def older_than(runs: Iterable[RunInfo], seconds: float, now: float | None = None) -> list[RunInfo]:
    """The runs that ended more than ``seconds`` ago (running ones too: the caller keeps
    those still going, saying so)."""
    cutoff = (time.time() if now is None else now) - seconds
    return [run for run in runs if ended_at(run) < cutoff]
