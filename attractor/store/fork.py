"""``attractor fork RUN_DIR --from NODE``: a new run that starts where another was at NODE.

:func:`fork_run_dir` copies the run directory (its pipeline, journal, results
and node folders: the history the new run's ``--from`` rebuilds NODE's state
from) into a new one and marks its workspace record as forked. The launcher
then continues the copy ``--from NODE``; when its workspace is opened, the fork
gets a branch of its own (``attractor/NEW_RUN_ID``) and, for a worktree, a
worktree of its own, both at the commit NODE was first entered with
(engine/workspace_hooks.py, when the run opens it). The original run directory, its branch and its
worktree are not written.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from attractor.errors import InputFileError, UsageError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import EVENTS_LIMIT, STATE_LIMIT, read_lines
from attractor.fileio.writes import atomic_write_text
from attractor.store.checkpoint import Checkpoint
from attractor.store.journal import JOURNAL
from attractor.store.rundir import CHECKPOINT, EVENTS, PROCESSES, RESULTS, RunDir, new_run_dir

#: What a fork does not copy: the lock, the process ledger, the marker of a
#: stage in progress, and the scratch folder of sandboxed commands.
_NOT_COPIED = frozenset({".lock", PROCESSES, "workspace-stage.json", "scratch"})
#: What a fork writes itself, cut at the fork point.
_CUT = frozenset({CHECKPOINT, EVENTS, JOURNAL, RESULTS})


def fork_run_dir(
    run_dir: Path, node: str, logs_dir: str | None, point: Checkpoint, nodes: Iterable[str]
) -> Path:
    """A copy of ``run_dir`` for a fork from ``node``: the new directory.

    ``point`` is the state when ``node`` was first entered (its counts of journal
    records and result rows those of that moment); ``nodes`` the pipeline's node
    ids, whose folders are copied only for the nodes that ran before it.

    Raises:
        UsageError: ``run_dir`` is not a run directory, or ``logs_dir`` cannot be used.
    """
    source = RunDir(run_dir)
    if not source.checkpoint_path.is_file():
        raise UsageError(f"{run_dir}: not a run directory (no checkpoint.json); check the path")
    manifest = source.read_manifest()
    name = str(manifest.get("graph") or manifest.get("name") or run_dir.name)
    # Read before anything is made: a damaged file stops the fork with nothing behind.
    rows = _head_lines(source.path / RESULTS, point.node_results_count)
    ran = {str(_record(row, source.path / RESULTS).get("node")) for row in rows}
    later = {source.stage_path(n).name for n in nodes if n not in ran}
    journal = source.path / JOURNAL
    records = _head_lines(journal, None)
    kept = [x for x in records if _record(x, journal).get("seq", 0) <= point.journal_seq]
    events = _events_before(source.path / EVENTS, node)
    target = new_run_dir(logs_dir, name)
    for entry in run_dir.iterdir():
        if entry.name in _NOT_COPIED | _CUT or entry.name in later:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, target / entry.name, follow_symlinks=False)
    copy = RunDir(target)
    atomic_write_text(copy.path / RESULTS, "".join(rows))
    atomic_write_text(copy.path / JOURNAL, "".join(kept))
    atomic_write_text(copy.path / EVENTS, "".join(events))
    manifest = copy.read_manifest()
    manifest["forked_from"] = {"run_dir": str(run_dir.resolve()), "node": node}
    manifest.pop("continuations", None)
    workspace = manifest.get("workspace")
    if isinstance(workspace, dict) and workspace.get("mode") not in (None, "none"):
        manifest["workspace"] = {**workspace, "forked_from": workspace.get("run_id")}
    copy.write_manifest(manifest)
    # Last: the checkpoint makes the copy a run that can be resumed, and only once its
    # manifest names the fork (a resume of a half-made copy would reopen the original's
    # workspace).
    copy.save_checkpoint(point)
    return target


def _head_lines(
    path: Path,
    count: int | None,
    *,
    before: Callable[[str], bool] | None = None,
    total_limit: int = STATE_LIMIT,
) -> list[str]:
    """The first ``count`` whole lines of run file ``path`` (all with None; none when it is
    missing), up to the first line ``before`` holds true of, read as every run file is: a
    regular file, without blocking, at most ``total_limit`` bytes.

    Raises:
        UsageError: the file cannot be read (damaged: not a regular file, too large).
    """
    lines: list[str] = []
    try:
        for _, raw in read_lines(path, path.name, total_limit=total_limit):
            line = raw.decode("utf-8", errors="replace") + "\n"
            if (count is not None and len(lines) >= count) or (before and before(line)):
                break
            lines.append(line)
    except InputFileError as exc:
        if exc.errno == errno.ENOENT:
            return []
        damaged = f"{path}: {exc.reason}; the run directory is damaged, fork another run"
        raise UsageError(damaged) from None
    return lines


def _events_before(path: Path, node: str) -> list[str]:
    """The event lines of ``path`` before ``node`` first started (the event log may be as
    large as a run lets it grow, :data:`EVENTS_LIMIT`; it is read no further than that)."""

    def starts(line: str) -> bool:
        if f'"{node}"' not in line:  # cheap test first: most lines name another node
            return False
        event = _record(line, path)
        return event.get("type") == "stage_started" and event.get("name") == node

    return _head_lines(path, None, before=starts, total_limit=EVENTS_LIMIT)


def _record(line: str, path: Path) -> dict[str, Any]:
    """The JSON object on ``line`` of ``path`` ({} for a line that holds none)."""
    try:
        value = loads_json(line, path, path.name)
    except (ValueError, InputFileError):
        return {}
    return value if isinstance(value, dict) else {}
