"""Adding a linked worktree that many branches can add at once.

``git worktree add`` cannot run concurrently in one repository: each one (and
the ``git branch -f`` it starts for ``-B``) reads every registered worktree's
admin folder, while another is writing its own file by file; a reader that
finds ``commondir`` created but not yet written dies ("failed to read
.../commondir"). Run one at a time, 64 branches of a fan-out paid 64 of them in
a row (three git processes each), before any branch could start.

:func:`add_worktree` makes the same worktree without that window. The admin
folder git documents (gitrepository-layout(5): ``worktrees/ID`` holding
``gitdir``, ``commondir`` and ``HEAD``) is written in a folder of its own and
renamed into ``worktrees/`` in one step, so another git sees it whole or not
at all; then one ``git reset --hard`` inside it makes the branch, the index and
the files. The worktree's ``.git`` file is written last (the admin folder is
``locked`` meanwhile, as git's own is, so ``git worktree prune`` leaves it): a
worktree without it was never finished, and is made again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio

from attractor.errors import WorkspaceError
from attractor.workspace.git import Git


def _mode(mode: int, umask: int) -> int:
    return mode & ~umask if umask >= 0 else mode


def _write(path: Path, text: str, umask: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _mode(0o666, umask))
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _slots(common_dir: Path, path: Path) -> list[tuple[Path, str | None]]:
    """The admin folders ``path``'s worktree may have (``worktrees/NAME``, ``NAME2``...),
    each with the ``.git`` its ``gitdir`` names (None: none), up to the first free one."""
    found: list[tuple[Path, str | None]] = []
    for n in range(1, 1000):
        admin = common_dir / "worktrees" / (path.name if n == 1 else f"{path.name}{n}")
        try:
            found.append((admin, (admin / "gitdir").read_text(encoding="utf-8").strip()))
        except FileNotFoundError:
            found.append((admin, None))
            if not admin.exists():
                return found
        except OSError:
            found.append((admin, None))
    raise WorkspaceError(f"no free worktree name for {path.name} in {common_dir / 'worktrees'}")


def adopt(common_dir: Path, path: Path) -> Path | None:
    """The admin folder of a finished worktree at ``path`` whose ``.git`` file a stage
    deleted (its ``.git`` written again), None when there is none."""
    for admin, said in _slots(common_dir, path):
        if said == str(path / ".git") and not (admin / "locked").exists():
            (path / ".git").write_text(f"gitdir: {admin}\n")
            return admin
    return None


def _admin_folder(common_dir: Path, path: Path, ref: str, umask: int) -> Path:
    """Folder ``path``, and its admin folder ``common_dir/worktrees/ID`` made whole in
    one rename."""
    path.parent.mkdir(mode=_mode(0o777, umask), parents=True, exist_ok=True)
    path.mkdir(mode=_mode(0o777, umask), exist_ok=True)
    (common_dir / "worktrees").mkdir(mode=_mode(0o777, umask), exist_ok=True)
    dot_git = path / ".git"
    for admin, said in _slots(common_dir, path):
        if said is None and not admin.exists():
            break  # free
        if said == str(dot_git):  # an earlier attempt cut short before its .git file
            shutil.rmtree(admin, ignore_errors=True)
            break
    new = path.parent / f".{path.name}.{os.getpid()}.admin"  # two processes never share it
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir(mode=_mode(0o777, umask))
    _write(new / "gitdir", f"{dot_git}\n", umask)
    _write(new / "commondir", f"{os.path.relpath(common_dir, admin)}\n", umask)
    _write(new / "HEAD", f"ref: {ref}\n", umask)
    # As git does while it makes one: `git worktree prune` leaves a locked worktree be,
    # and this one's .git file does not exist yet.
    _write(new / "locked", "initializing\n", umask)
    try:
        new.rename(admin)
    except OSError as exc:
        shutil.rmtree(new, ignore_errors=True)
        raise WorkspaceError(f"cannot register worktree {path}: {exc.strerror or exc}") from None
    return admin


async def add_worktree(common_dir: Path, path: Path, branch: str, commit: str, umask: int) -> Path:
    """A worktree at ``path`` on branch ``branch`` (made, or reset, at ``commit``),
    like ``git worktree add --force -B``; its admin folder."""
    admin = register_worktree(common_dir, path, branch, umask)
    await check_out(admin, path, commit, umask)
    return admin


def register_worktree(common_dir: Path, path: Path, branch: str, umask: int) -> Path:
    """The first half of :func:`add_worktree`: folder ``path`` and its admin folder,
    locked, naming branch ``branch`` (its commit not needed yet). Finished by
    :func:`check_out`, or thrown away by :func:`discard`."""
    return _admin_folder(common_dir, path, f"refs/heads/{branch}", umask)


async def check_out(admin: Path, path: Path, commit: str, umask: int) -> None:
    """The second half of :func:`add_worktree`: the branch at ``commit``, the index and
    the files, then the ``.git`` file; the worktree is discarded when this fails."""
    git = Git(path, {"GIT_DIR": str(admin), "GIT_WORK_TREE": str(path)}, umask)
    try:
        # HEAD names the branch: the reset makes it (or moves it, as -B does), the index,
        # the files.
        await git.run(
            "-c", "core.hooksPath=/dev/null", "reset", "--quiet", "--hard",
            "--no-recurse-submodules", commit,
        )  # fmt: skip
        _write(path / ".git", f"gitdir: {admin}\n", umask)
        (admin / "locked").unlink()
    except BaseException:  # stopped or failed half way: no locked worktree left behind
        await discard(admin, path)
        raise


async def discard(admin: Path, path: Path) -> None:
    """Remove a worktree that was never finished (shielded: it runs when cancelled)."""
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(_discard, admin, path)


def _discard(admin: Path, path: Path) -> None:
    """Remove a worktree that was never finished: its admin folder, then its files."""
    shutil.rmtree(admin, ignore_errors=True)
    shutil.rmtree(path, ignore_errors=True)


def _registered_admin(path: Path) -> Path | None:
    """The admin folder of worktree ``path`` when it is plainly one of the repository's
    (its ``.git`` file and the folder's ``gitdir`` name each other, and it is not locked)."""
    try:
        admin = Path((path / ".git").read_text().removeprefix("gitdir:").strip())
        said = (admin / "gitdir").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if admin.parent.name != "worktrees" or said != str(path / ".git"):
        return None
    return None if (admin / "locked").exists() else admin


async def remove_worktree(path: Path) -> bool:
    """Remove worktree ``path`` as ``git worktree remove --force`` does, without reading
    the other worktrees (so that it never meets one half made): whether it could.

    The admin folder leaves ``worktrees/`` in one rename, then both folders are deleted.
    """
    admin = _registered_admin(path)
    if admin is None:
        return False
    trash = path.parent / f".{path.name}.removed"
    await anyio.to_thread.run_sync(shutil.rmtree, trash, True)
    try:
        admin.rename(trash)
    except OSError:
        return False

    def delete() -> None:
        shutil.rmtree(trash, ignore_errors=True)
        shutil.rmtree(path, ignore_errors=True)

    await anyio.to_thread.run_sync(delete)
    return True
