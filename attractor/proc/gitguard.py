"""Git's control files out of a sandboxed command's reach, its commits still possible;
and the run directory whole (:func:`run_dir_shield`). For bwrap and containers alike.

A git directory holds what git *runs*: ``config`` (``core.fsmonitor``, filter
and merge drivers, ``core.hooksPath``, includes), ``hooks/``, a ``commondir``
file that sends git to another directory's config, the submodules' own git
directories under ``modules/``. None of it shows in a diff. A command that could
write there would have the next git command run what it planted, outside the
sandbox: attractor's own checkpoint (``git add -A``) at the end of the step, and
the user's next ``git status`` long after the run.

So for each writable place that is a git directory, or holds one (``.git``), the
sandbox binds the directory read-only and only what a commit writes writable
again: ``objects/``, ``refs/`` (or ``reftable/``), ``logs/``, and the admin
folder of a writable worktree (``worktrees/ID/``: its index and HEAD), whose
``commondir`` and ``gitdir`` stay read-only. A worktree's ``.git`` file, which
names its admin folder, is read-only too. Each of these is a mount point inside
the sandbox, so it cannot be renamed away and replaced either.

What an agent gives up: changing the repository's config, hooks and packed refs,
and with the main work tree writable (``--workspace none`` in a repository), its
index (``git add``, ``git commit``, ``git stash`` there fail: the run's own
checkpoints commit in a workspace).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

#: What a commit writes in a git directory (reftable: refs in a format of their own).
COMMIT_WRITES = ("objects", "refs", "reftable", "logs")
#: A worktree's own config (read with ``extensions.worktreeConfig``, which ``git
#: sparse-checkout`` sets): kept read-only, made empty first when missing.
WORKTREE_CONFIG = "config.worktree"
#: What names, in a worktree's admin folder, the repository it belongs to, or configures it.
ADMIN_LINKS = ("commondir", "gitdir", WORKTREE_CONFIG)


def git_guards(writable: list[Path]) -> list[tuple[Path, bool]]:
    """The mounts, each (path, writable), that go after the binds of ``writable``
    (resolved paths), in order, to keep the control files of the git directories
    among or in them read-only (a later mount covers an earlier one)."""
    git_dirs: list[Path] = []
    git_files: list[Path] = []
    for root in writable:
        dot = root / ".git"
        if dot.is_symlink():  # guarded where it is, when that is a writable place
            target = dot.resolve()
            if target.is_dir() and any(target.is_relative_to(r) for r in writable):
                git_dirs.append(target)
        elif dot.is_file():
            git_files.append(dot)
        elif dot.is_dir():
            git_dirs.append(dot)
        elif _is_git_dir(root):
            git_dirs.append(root)
    admins = [a for a in (admin_of(f) for f in git_files) if a is not None]
    mounts: list[tuple[Path, bool]] = []
    for git_dir in dict.fromkeys(git_dirs):
        mounts.append((git_dir, False))
        mounts += [(git_dir / n, True) for n in COMMIT_WRITES if (git_dir / n).is_dir()]
        for admin in admins:
            if admin.parent == git_dir / "worktrees":
                mounts.append((admin, True))
                _made_empty(admin / WORKTREE_CONFIG)  # missing, a step could write it
                mounts += [(admin / n, False) for n in ADMIN_LINKS if (admin / n).is_file()]
        # A writable place inside it (a worktree of the run lives in .git/attractor/).
        mounts += [(r, True) for r in writable if r != git_dir and r.is_relative_to(git_dir)]
    mounts += [(git_file, False) for git_file in git_files]
    return mounts


def run_dir_shield(run_dir: Path | None, writable: list[Path]) -> Path | None:
    """What goes read-only over a writable path to keep the run directory whole.

    The folder, right under the writable path, that holds the run directory (all
    of ``.attractor`` for the default ``.attractor/runs/``; the run directory itself
    when it lies right there): a folder above the run directory that stayed
    writable could be renamed away, mounts and all, and a copy put in its place
    for attractor to write through.
    """
    if run_dir is None:
        return None
    for path in writable:
        if run_dir.is_relative_to(path) and run_dir != path:
            return path / run_dir.relative_to(path).parts[0]
    return None


def _made_empty(path: Path) -> None:
    """An empty file at ``path`` unless one is there (an empty config changes nothing)."""
    with contextlib.suppress(OSError):  # there already, or the folder is not ours to change
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def admin_of(git_file: Path) -> Path | None:
    """The admin folder a worktree's ``.git`` file names (``gitdir: PATH``)."""
    try:
        text = git_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    named = Path(text[len("gitdir:") :].strip())
    return (git_file.parent / named).resolve()
