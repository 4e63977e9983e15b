"""Git's control files out of a sandboxed command's reach, its commits still possible.

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

from pathlib import Path

#: What a commit writes in a git directory (reftable: refs in a format of their own).
COMMIT_WRITES = ("objects", "refs", "reftable", "logs")
#: What names, in a worktree's admin folder, the repository it belongs to.
ADMIN_LINKS = ("commondir", "gitdir", "config.worktree")


def git_guards(writable: list[Path]) -> list[str]:
    """bwrap flags, placed after the binds of ``writable`` (resolved paths), that keep
    the control files of the git directories among or in them read-only."""
    git_dirs: list[Path] = []
    git_files: list[Path] = []
    for root in writable:
        dot = root / ".git"
        if dot.is_file():
            git_files.append(dot)
        elif dot.is_dir():
            git_dirs.append(dot)
        elif _is_git_dir(root):
            git_dirs.append(root)
    admins = [a for a in (_admin_of(f) for f in git_files) if a is not None]
    argv: list[str] = []
    for git_dir in dict.fromkeys(git_dirs):
        argv += ["--ro-bind", str(git_dir), str(git_dir)]
        for name in COMMIT_WRITES:
            if (git_dir / name).is_dir():
                argv += ["--bind", str(git_dir / name), str(git_dir / name)]
        for admin in admins:
            if admin.parent == git_dir / "worktrees":
                argv += ["--bind", str(admin), str(admin)]
                for name in ADMIN_LINKS:
                    if (admin / name).is_file():
                        argv += ["--ro-bind", str(admin / name), str(admin / name)]
        # A writable place inside it (a worktree of the run lives in .git/attractor/).
        for root in writable:
            if root != git_dir and root.is_relative_to(git_dir):
                argv += ["--bind", str(root), str(root)]
    for git_file in git_files:
        argv += ["--ro-bind", str(git_file), str(git_file)]
    return argv


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def _admin_of(git_file: Path) -> Path | None:
    """The admin folder a worktree's ``.git`` file names (``gitdir: PATH``)."""
    try:
        text = git_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    named = Path(text[len("gitdir:") :].strip())
    return (git_file.parent / named).resolve()
