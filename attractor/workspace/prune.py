"""``attractor runs --prune``: the worktrees and branches of runs whose directory is gone.

Each worktree run registers itself in the repository
(``.git/attractor/runs/RUN_ID`` holds the path of its run directory). A run
whose directory was deleted no longer needs its worktree (nor those of its
parallel branches), its branches ``attractor/RUN_ID`` and ``attractor/RUN_ID--*``
or its lost refs: :func:`prune` removes them. A snapshot run keeps everything
in its run directory, so deleting that directory is enough.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import field
from pathlib import Path

from attractor.valueclass import mutable
from attractor.workspace.git import Git

#: Where a repository lists its runs: ``<git common dir>/attractor/runs/RUN_ID``.
REGISTRY = Path("attractor") / "runs"


def register(common_dir: Path, run_id: str, run_dir: Path) -> None:
    """Note that the worktree run ``run_id`` keeps its state in ``run_dir``."""
    folder = common_dir / REGISTRY
    folder.mkdir(parents=True, exist_ok=True)
    (folder / run_id).write_text(str(run_dir.resolve()) + "\n")


def unregister(common_dir: Path, run_id: str) -> None:
    """Forget run ``run_id`` (its worktree could not be made after all)."""
    (common_dir / REGISTRY / run_id).unlink(missing_ok=True)


@mutable
class Pruned:
    """What :func:`prune` removed (run ids), and what it kept (their run directory exists)."""

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _gone(entry: Path) -> bool:
    try:
        run_dir = Path(entry.read_text().strip())
    except OSError:
        return False
    return not (run_dir / "manifest.json").exists()


async def prune(where: Path, only: Collection[str] | None = None) -> Pruned:
    """Remove the worktrees, branches and refs of the deleted runs of the repository at ``where``
    (with ``only``: of those of these run ids alone).

    Returns an empty :class:`Pruned` outside a git repository.
    """
    code, out, _ = await Git(where).run("rev-parse", "--path-format=absolute",
                                        "--git-common-dir", check=False)  # fmt: skip
    if code != 0:
        return Pruned()
    common = Path(out.strip())
    git = Git(where, {"GIT_DIR": str(common)})
    done = Pruned()
    folder = common / REGISTRY
    entries = sorted(folder.iterdir()) if folder.is_dir() else []
    for entry in entries:
        if only is not None and entry.name not in only:
            continue
        if not _gone(entry):
            done.kept.append(entry.name)
            continue
        await _remove_run(git, common, entry.name)
        entry.unlink(missing_ok=True)
        done.removed.append(entry.name)
    await git.run("worktree", "prune", check=False)
    return done


async def _remove_run(git: Git, common: Path, run_id: str) -> None:
    worktrees = common / "attractor" / "worktrees"
    for path in [worktrees / run_id, *worktrees.glob(f"{run_id}--*")]:
        await git.run("worktree", "remove", "--force", str(path), check=False)
    out = await git.out(
        "for-each-ref", "--format=%(refname)",
        "refs/heads/attractor/", f"refs/attractor/{run_id}/",
    )  # fmt: skip
    refs = [r for r in out.splitlines() if _belongs(r, run_id)]
    for ref in refs:
        await git.run("update-ref", "-d", ref, check=False)


def _belongs(ref: str, run_id: str) -> bool:
    return (
        ref == f"refs/heads/attractor/{run_id}"
        or ref.startswith(f"refs/heads/attractor/{run_id}--")
        or ref.startswith(f"refs/attractor/{run_id}/")
    )
