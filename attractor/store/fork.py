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

import shutil
from pathlib import Path

from attractor.errors import UsageError
from attractor.store.rundir import PROCESSES, RunDir, new_run_dir

#: What a fork does not copy: the lock, the process ledger, the marker of a
#: stage in progress, and the scratch folder of sandboxed commands.
_NOT_COPIED = frozenset({".lock", PROCESSES, "workspace-stage.json", "scratch"})


def fork_run_dir(run_dir: Path, node: str, logs_dir: str | None) -> Path:
    """A copy of ``run_dir`` for a fork from ``node``: the new directory.

    Raises:
        UsageError: ``run_dir`` is not a run directory, or ``logs_dir`` cannot be used.
    """
    source = RunDir(run_dir)
    if not source.checkpoint_path.is_file():
        raise UsageError(f"{run_dir}: not a run directory (no checkpoint.json); check the path")
    manifest = source.read_manifest()
    name = str(manifest.get("graph") or manifest.get("name") or run_dir.name)
    target = new_run_dir(logs_dir, name)
    for entry in run_dir.iterdir():
        if entry.name in _NOT_COPIED:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, target / entry.name, follow_symlinks=False)
    copy = RunDir(target)
    manifest = copy.read_manifest()
    manifest["forked_from"] = {"run_dir": str(run_dir.resolve()), "node": node}
    manifest.pop("continuations", None)
    workspace = manifest.get("workspace")
    if isinstance(workspace, dict) and workspace.get("mode") not in (None, "none"):
        manifest["workspace"] = {**workspace, "forked_from": workspace.get("run_id")}
    copy.write_manifest(manifest)
    return target
