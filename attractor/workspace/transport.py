"""A parallel branch on another machine: its workspace travels as git bundles.

The run side writes a bundle of the fan-out's commit into the shared run
directory (:func:`send`); the branch's worker makes a repository of its own
from it in a local temporary folder (:func:`receive`), works there (a worktree
per branch, as on the run's machine) and writes its commits back as a bundle
(:func:`send_back`); the run side fetches them (:func:`take_back`) under
``refs/attractor/RUN_ID/remote/BRANCH``, so the fan-in merge works across
machines. Only the run directory is shared, never a git directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from attractor.valueclass import frozen
from attractor.workspace.create import safe_id
from attractor.workspace.git import Git
from attractor.workspace.workspace import Workspace, branch_of

#: The folder of the run directory the bundles go through.
BUNDLES = "bundles"


@frozen
class Parcel:
    """What a remote branch needs to make its workspace: a bundle and where to start."""

    bundle: Path
    ref: str
    head: str
    run_id: str
    #: The workdir's folder below the work tree ("." for the top).
    sub: str
    max_bytes: int | None = None


async def send(main: Workspace, branch: str, run_dir: Path) -> Parcel:
    """A bundle of ``main``'s last checkpoint for the remote branch ``branch``."""
    ref = f"refs/attractor/{main.run_id}/fanout/{safe_id(branch)}"
    await main.git.run("update-ref", ref, main.head)
    folder = run_dir / BUNDLES
    folder.mkdir(exist_ok=True)
    path = folder / f"{safe_id(branch)}.in.bundle"
    await main.git.run("bundle", "create", "--quiet", str(path), ref)
    sub = main.workdir.relative_to(main.work_tree).as_posix()
    return Parcel(path, ref, main.head, main.run_id, sub, main.max_bytes)


async def receive(parcel: Parcel, where: Path) -> Workspace:
    """A repository of its own in ``where`` (a local folder), checked out at the fan-out."""
    git_dir = where / ".git"
    git = Git(where, {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(where)})
    branch = "refs/heads/" + branch_of(parcel.run_id)
    await git.run("init", "--quiet", "--template=")
    await git.run("fetch", "--quiet", "--no-tags", str(parcel.bundle), f"{parcel.ref}:{branch}")
    await git.run("symbolic-ref", "HEAD", branch)
    await git.run("read-tree", "-u", "--reset", parcel.head)
    return Workspace(
        mode="snapshot",
        run_id=parcel.run_id,
        git=git,
        work_tree=where,
        workdir=where / parcel.sub,
        common_dir=git_dir,
        base=parcel.head,
        head=parcel.head,
        max_bytes=parcel.max_bytes,
    )


async def send_back(remote: Workspace, ref: str, run_dir: Path, branch: str) -> Path:
    """The branch's commits (its ``ref``), as a bundle in the shared run directory."""
    path = run_dir / BUNDLES / f"{safe_id(branch)}.out.bundle"
    await remote.git.run("bundle", "create", "--quiet", str(path), ref)
    return path


async def take_back(main: Workspace, path: Path, ref: str, branch: str) -> str:
    """Fetch a remote branch's commits into the run's repository; the ref they are kept under."""
    kept = f"refs/attractor/{main.run_id}/remote/{safe_id(branch)}"
    await main.git.run("fetch", "--quiet", "--no-tags", str(path), f"+{ref}:{kept}")
    return kept


def discard(where: Path) -> None:
    """Remove a remote branch's local repository."""
    shutil.rmtree(where, ignore_errors=True)
