"""What a run, or one of its stages, changed: ``attractor diff`` and the web page's node panel.

Read from the run directory alone: the manifest's workspace record (which git
directory and branch) and a stage's ``status.json`` (the commit it started
from and the one it ended with; ``status.engine.json`` when the node wrote its
own status file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attractor.errors import InputFileError, UsageError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import TEXT_LIMIT, read_bounded
from attractor.valueclass import frozen
from attractor.workspace.git import Git

_STATUS_FILES = ("status.engine.json", "status.json")


def _read_json(path: Path) -> Any:
    """A run file's JSON, None when it is missing or damaged (a FIFO, a device, too deep)."""
    try:
        return loads_json(read_bounded(path, TEXT_LIMIT, "run file"), path, "run file")
    except (InputFileError, ValueError):
        return None


def workspace_record(run_dir: Path) -> dict[str, Any]:
    """The run's workspace record.

    Raises:
        UsageError: not a run directory, or a run without a workspace.
    """
    manifest = _read_json(run_dir / "manifest.json")
    if not isinstance(manifest, dict):
        raise UsageError(f"{run_dir}: not a run directory (no readable manifest.json)")
    record = manifest.get("workspace")
    if not isinstance(record, dict) or record.get("mode") in (None, "none"):
        raise UsageError(
            f"{run_dir}: this run kept no checkpoints of its files (--workspace none), "
            "so there is nothing to diff"
        )
    return record


def stage_range(run_dir: Path, node: str) -> tuple[str, str] | None:
    """The commits a stage started from and ended with (its last visit); None: not run yet."""
    for name in _STATUS_FILES:
        data = _read_json(run_dir / node / name)
        if isinstance(data, dict) and data.get("commit"):
            end = str(data["commit"])
            return str(data.get("start_commit") or end), end
    return None


def _git(record: dict[str, Any]) -> Git:
    env = {"GIT_DIR": str(record["git_dir"]), "GIT_WORK_TREE": str(record["work_tree"])}
    return Git(Path(str(record["work_tree"])).parent, env)


async def run_diff(run_dir: Path, node: str | None = None, *, stat: bool = False) -> str:
    """The unified diff (or ``--stat`` summary) of the whole run, or of stage ``node``.

    Raises:
        UsageError: no workspace, or ``node`` has no checkpoint (it did not run).
    """
    return await (await diff_range(run_dir, node)).diff(stat=stat)


@frozen
class DiffRange:
    """Two commits of a run's workspace and the git that compares them."""

    git: Git
    start: str
    end: str

    async def diff(self, *, stat: bool = False) -> str:
        """The unified diff (or ``--stat`` summary) from ``start`` to ``end``."""
        how = ["--stat"] if stat else ["--patch", "--binary"]
        _, out, _ = await self.git.run(
            "diff", *how, "--no-color", "--no-ext-diff", self.start, self.end
        )
        return out


async def diff_range(run_dir: Path, node: str | None = None) -> DiffRange:
    """What :func:`run_diff` compares: the whole run, or stage ``node``.

    Raises:
        UsageError: no workspace, or ``node`` has no checkpoint (it did not run).
    """
    record = workspace_record(run_dir)
    git = _git(record)
    if node is None:
        start = str(record["base"])
        end = await git.out("rev-parse", "--verify", "--quiet", "refs/heads/" + record["branch"])
    else:
        found = stage_range(run_dir, node)
        if found is None:
            raise UsageError(
                f"{run_dir}: node {node!r} has no checkpoint (it has not run, or the run "
                "kept none); attractor status RUN_DIR lists the stages"
            )
        start, end = found
    return DiffRange(git, start, end)
