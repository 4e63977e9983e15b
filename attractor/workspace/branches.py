"""Parallel branches in worktrees of their own, merged at the fan-in by a policy.

:func:`open_branch` gives a branch of a parallel node a worktree at the run's
last checkpoint (the fan-out's commit) on a git branch of its own
(``attractor/RUN_ID--BRANCH``), so branches cannot write over each other's
files. :func:`merge_branches` merges the branch commits into the run's
workspace with ``git merge-tree`` (nothing is written to the work tree until
every merge is clean): a conflict leaves the run's files as they were and
names the conflicting files, never a half-merged tree.

A branch resumed after its run was stopped or killed finds its worktree as its
last completed stage left it: what an interrupted stage had half written
(noted by :meth:`~attractor.workspace.workspace.Workspace.mark_stage`) is put
back, kept under a lost ref, and named in the run's notes.
"""

from __future__ import annotations

import shutil
from dataclasses import field
from pathlib import Path

import anyio

from attractor.proc.gitguard import admin_of
from attractor.valueclass import mutable
from attractor.workspace.commits import message
from attractor.workspace.create import _make_links, safe_id
from attractor.workspace.git import Git
from attractor.workspace.names import TRAILER
from attractor.workspace.workspace import Workspace, branch_of
from attractor.workspace.worktrees import add_worktree, adopt, remove_worktree

#: How a fan-in takes its branches' changes (the node's ``merge`` attribute).
MERGE_POLICIES = ("all", "selected", "none")


def branch_name(main: Workspace, branch: str) -> str:
    return safe_id(f"{main.run_id}--{branch}")


def _admin_git(main: Workspace) -> Git:
    """git for the repository that holds the branches (the user's, or the snapshot's)."""
    if main.repo is not None:
        return Git(main.repo, {"GIT_DIR": str(main.common_dir), "GIT_WORK_TREE": str(main.repo)})
    return Git(main.work_tree, {"GIT_DIR": str(main.common_dir)}, main.git.umask)


def _branch_path(main: Workspace, name: str) -> Path:
    if main.repo is not None:
        return main.common_dir / "attractor" / "worktrees" / name
    return main.common_dir / "attractor-branches" / name


async def open_branch(main: Workspace, branch: str, at: str | None = None) -> Workspace:
    """The worktree of parallel branch ``branch``: its own, at ``main``'s last checkpoint.

    A branch continued after a resume finds its worktree as its last completed
    stage left it (``at``, its last checkpoint as its saved state says): a stage
    the stop caught half-way starts again from where it began.
    """
    name = branch_name(main, branch)
    path = _branch_path(main, name)
    # Branches starting together make their worktrees at once (see worktrees.py).
    admin = admin_of(path / ".git") if (path / ".git").is_file() else None
    if admin is not None and not admin.is_dir() and at in (None, main.head):
        # A branch starting from the fan-out's checkpoint: its worktree's removal (at a
        # fan-in) was cut short, the admin folder goes first. What is left is a finished
        # branch's: made again. (A branch resumed past a checkpoint of its own fails on
        # it, loudly: its work would be lost.)
        await anyio.to_thread.run_sync(shutil.rmtree, path, True)
        admin = None
    existed = admin is not None
    adopted = None if existed else adopt(main.common_dir, path)  # its .git deleted
    if adopted is not None:
        admin, existed = adopted, True
        main.notes.append(f"branch {branch}: its worktree's .git file was gone; written again")
    elif admin is None:
        admin = await add_worktree(
            main.common_dir, path, branch_of(name), main.head, main.git.umask
        )
    env = {"GIT_DIR": str(admin), "GIT_WORK_TREE": str(path)}
    workspace = Workspace(
        mode=main.mode,
        run_id=name,
        git=Git(path, env, main.git.umask),
        work_tree=path,
        workdir=path / main.workdir.relative_to(main.work_tree),
        common_dir=main.common_dir,
        base=main.head,
        head="",
        max_bytes=main.max_bytes,
        repo=main.repo,
        admin=admin,
    )
    if main.repo is not None:
        workspace.linked = _make_links(main.repo, path, tuple(main.linked)) or list(main.linked)
        workspace.excluded += workspace.linked
    if existed:
        workspace.head = await workspace.tip()
        await _put_back_interrupted(main, workspace, branch, at)
    else:  # just checked out at the fan-out's checkpoint, whose tree the run knows
        workspace.head, workspace.tree = main.head, main.tree
        workspace.fresh = workspace.untouched = True
    workspace.workdir.mkdir(parents=True, exist_ok=True)
    return workspace


async def _put_back_interrupted(
    main: Workspace, workspace: Workspace, branch: str, at: str | None
) -> None:
    """A resumed branch's work tree back to where its interrupted stage began (or, with
    no stage caught, to its last checkpoint ``at``); what it held is kept and named."""
    removed = workspace.clear_stale_locks()
    mark = workspace.stage_mark()
    target = str(mark["start"]) if mark is not None else (at or workspace.head)
    if not await workspace.git.ok("cat-file", "-e", target + "^{commit}"):
        target = workspace.head
    kept = await workspace.restore(target, f"branch {branch} resumed")
    workspace.clear_stage_mark()
    main.notes += [f"branch {branch}: removed {lock}, left by a killed git" for lock in removed]
    main.notes += workspace.notes
    workspace.notes.clear()
    if kept is None:
        return
    stage = f"stage {mark['node']}" if mark is not None else "a stage"
    main.notes.append(
        f"branch {branch}: {stage} was cut short; it starts again from {target[:12]}, "
        f"where it began, and what it had left is kept as {kept}: git show {kept}"
    )


async def close_branch(main: Workspace, branch: str) -> None:
    """Remove a branch's worktree (its git branch stays: the run's history)."""
    path = _branch_path(main, branch_name(main, branch))
    if await remove_worktree(path):
        return
    async with main.worktrees_lock:  # one git may not read what another half removed
        await _admin_git(main).run("worktree", "remove", "--force", str(path), check=False)


@mutable
class Merge:
    """How a fan-in merge went."""

    commit: str
    #: The branches merged, and those that had nothing new.
    merged: list[str] = field(default_factory=list)
    #: The branch whose merge conflicted, and the conflicting files (empty: clean).
    conflict_with: str = ""
    conflicts: list[str] = field(default_factory=list)


async def merge_branches(main: Workspace, commits: list[tuple[str, str]], node: str) -> Merge:
    """Merge each ``(branch, commit)`` into ``main``; all or nothing.

    The merges are made with ``git merge-tree``; only once every one is clean
    does the work tree move to the result (one ``read-tree`` and a ref update).
    """
    async with main.lock:
        current = main.head
        merged: list[str] = []
        for branch, commit in commits:
            if commit in (current, main.head):
                continue  # the branch changed nothing
            if await main.git.ok("merge-base", "--is-ancestor", commit, current):
                continue  # nothing the run does not have
            code, out, _ = await main.git.run(
                "merge-tree", "--write-tree", "--name-only", "--no-messages", current, commit,
                check=False,
            )  # fmt: skip
            lines = out.splitlines()
            if code == 1:
                return Merge(main.head, merged, branch, [f for f in lines[1:] if f])
            if code != 0:
                await main.git.run("merge-tree", "--write-tree", current, commit)  # raises
            text = message(
                f"attractor: merge branch {branch} at {node}",
                {
                    f"{TRAILER}-Run": main.run_id,
                    f"{TRAILER}-Node": node,
                    f"{TRAILER}-Kind": "merge",
                },
            )
            current = await main.git.out(
                "commit-tree", "--no-gpg-sign", lines[0], "-p", current, "-p", commit, "-F", "-",
                input=text.encode(),
            )  # fmt: skip
            merged.append(branch)
        if current != main.head:
            why = f"attractor: merge at {node}"
            await main.move(current, await main.tip(), main.head, why)
        return Merge(current, merged)
