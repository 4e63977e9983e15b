"""Making a run's workspace: a worktree of the user's repository, or a snapshot git directory.

``worktree``: the user's HEAD plus their uncommitted changes become one commit
(:func:`checkout_commit`, made with a copy of their index, so their checkout,
index and stash stay exactly as they were); the run's branch
``attractor/RUN_ID`` starts there, checked out in a worktree of its own under
the repository's git directory (``.git/attractor/worktrees/RUN_ID``). The
run's id is its run directory's name; when another run of the repository has
that branch already (two run directories of one name in different folders),
the new one gets ``RUN_ID-2``, ``RUN_ID-3``... (:func:`free_id`), and that is
its branch everywhere. A file over the size limit is left out of that first
commit as of every checkpoint, and named.

What git ignores is not in a worktree. The run gets the ignored paths named by
``workspace_link`` (default ``.venv``, ``venv``, ``node_modules``) as symbolic
links to the checkout's own, so ``.venv/bin/pytest`` works there without a new
install; they are never committed. A link is shared with the checkout: what a
stage installs into it lands in the checkout's environment, which is why only
environments are linked by default. ``workspace_setup`` names a command run
once in each new worktree instead (``uv sync``, ``npm ci``) for a run that must
not share them. It runs inside the run's boundary like any step's command (the
execution environment the engine passes as a :data:`SetupBoundary`: filtered
variables, the sandbox with the worktree writable, the run's network setting),
and its log is redacted.

``snapshot``: the stages work in the workdir itself; the checkpoints go to a
git directory in the run directory (``RUN_DIR/workspace.git``), so the workdir
gets no ``.git``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from attractor import redact
from attractor.errors import WorkspaceError
from attractor.fileio.writes import run_file_mode
from attractor.proc.environment import ExecutionEnvironment
from attractor.workspace.commits import Saved, commit_work_tree, exclusions, message
from attractor.workspace.git import Git
from attractor.workspace.names import (
    CHECKOUT_INDEX,
    OWN_FOLDER,
    SETUP_LOG,
    SNAPSHOT_GIT_DIR,
    TRAILER,
)
from attractor.workspace.preflight import WorkspacePlan
from attractor.workspace.prune import register, unregister
from attractor.workspace.refs import any_ref
from attractor.workspace.workspace import Workspace, branch_of
from attractor.workspace.worktrees import add_worktree, check_out, discard, register_worktree

#: The environment ``workspace_setup`` runs in, from its workdir, the other paths it
#: may write (the repository's git directory, the linked environments) and the run
#: directory. Without one it runs here with the default filtered environment.
SetupBoundary = Callable[[Path, tuple[Path, ...], Path], ExecutionEnvironment]


def safe_id(run_id: str) -> str:
    """``run_id`` as a branch name component."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", run_id).strip(".-")
    return re.sub(r"\.\.+|\.lock$", "-", cleaned) or "run"


def run_exclusions(root: Path, run_dir: Path) -> list[str]:
    """The paths under ``root`` that hold run directories: never part of a checkpoint."""
    excluded = [OWN_FOLDER]
    run_dir = run_dir.resolve()
    for folder in (run_dir.parent, run_dir):
        try:
            relative = folder.relative_to(root)
        except ValueError:
            continue
        if relative.parts:
            excluded.append(relative.as_posix())
            break
    return excluded


async def create(
    plan: WorkspacePlan, run_dir: Path, run_id: str, boundary: SetupBoundary
) -> Workspace:
    """The new workspace of the run in ``run_dir`` (worktree or snapshot, as planned);
    ``boundary``: where its ``workspace_setup`` runs."""
    run_dir = _absolute(run_dir)
    if plan.mode == "worktree":
        return await _create_worktree(plan, run_dir, safe_id(run_id), boundary)
    return await _create_snapshot(plan, run_dir, safe_id(run_id))


def _absolute(path: Path) -> Path:
    return path.resolve()


async def free_id(git: Git, common_dir: Path, run_id: str) -> str:
    """``run_id``, or ``run_id-N`` when another run of the repository has its branch,
    worktree or lost refs already."""
    candidate, n = run_id, 1
    while True:
        names = ("refs/heads/" + branch_of(candidate), f"refs/attractor/{candidate}")
        taken = any_ref(common_dir, names)  # read from the files, where they settle it
        if taken is None:
            taken = bool(await git.out("for-each-ref", "--count=1", "--format=%(refname)", *names))
        if not taken and not (common_dir / "attractor" / "worktrees" / candidate).exists():
            return candidate
        n += 1
        candidate = f"{run_id}-{n}"


async def checkout_commit(
    plan: WorkspacePlan, run_dir: Path, run_id: str, excluded: list[str]
) -> Saved:
    """HEAD plus the uncommitted changes of the user's checkout, as one commit.

    Staged with a copy of the user's index (its stat cache makes this quick);
    their index, work tree, stash and branches are not written. ``excluded``: the
    run folders' paths (:func:`run_exclusions`), which the first commit leaves out.
    """
    assert plan.repo is not None and plan.git_dir is not None
    index = run_dir / CHECKOUT_INDEX
    user = _checkout_git(plan)
    # HEAD as the preflight found it (or, for a plan made elsewhere, as it is now).
    head = plan.head or await user.out("rev-parse", "HEAD^{commit}")
    own = user.with_env(GIT_INDEX_FILE=str(index))
    try:
        # The checkout's index: git's environment here names no other (see git.py).
        if not _copy_index(plan.git_dir / "index", index):
            await own.run("read-tree", head)
        head_tree = plan.head_tree if plan.head else None
        head_tree = head_tree or await user.out("rev-parse", head + "^{tree}")
        text = message(
            "attractor: uncommitted changes of the checkout when the run started",
            {f"{TRAILER}-Run": run_id, f"{TRAILER}-Kind": "start"},
        )
        return await commit_work_tree(
            own, plan.repo, head, head_tree, text, excluded=excluded, max_bytes=plan.max_file_bytes
        )
    finally:
        index.unlink(missing_ok=True)


def _checkout_git(plan: WorkspacePlan) -> Git:
    """git for the user's checkout itself (its git directory and work tree)."""
    assert plan.repo is not None and plan.git_dir is not None
    return Git(plan.repo, {"GIT_DIR": str(plan.git_dir), "GIT_WORK_TREE": str(plan.repo)})


def _copy_index(real: Path, copy: Path) -> bool:
    """Copy the user's index (False when they have none yet)."""
    if not real.is_file():
        return False
    copy.write_bytes(real.read_bytes())
    return True


async def _create_worktree(
    plan: WorkspacePlan, run_dir: Path, run_id: str, boundary: SetupBoundary
) -> Workspace:
    assert plan.repo is not None and plan.common_dir is not None and plan.git_dir is not None
    user = _checkout_git(plan)
    run_id = await free_id(user, plan.common_dir, run_id)
    branch = branch_of(run_id)
    common = plan.common_dir
    path = common / "attractor" / "worktrees" / run_id
    made: dict[str, Path] = {}
    finished = False

    async def admin_folder() -> None:
        # It needs the names only: written while git stages the checkout.
        made["admin"] = register_worktree(common, path, branch, -1)

    try:
        try:
            async with anyio.create_task_group() as both:
                both.start_soon(admin_folder)
                excluded = run_exclusions(plan.repo, run_dir)
                start = await checkout_commit(plan, run_dir, run_id, excluded)
        except BaseExceptionGroup as errors:  # as either would have raised it (git missing...)
            raise errors.exceptions[0] from None
        base, admin = start.commit, made["admin"]
        # free_id found no branch of that name: nothing is reset (git worktree add -b),
        # and the branch goes again with the worktree when the run cannot start.
        await check_out(admin, path, base, -1)
        finished = True
        sub = plan.workdir.relative_to(plan.repo)
        env = {"GIT_DIR": str(admin), "GIT_WORK_TREE": str(path)}
        workspace = Workspace(
            mode="worktree",
            run_id=run_id,
            git=Git(path, env),
            work_tree=path,
            workdir=path / sub,
            common_dir=plan.common_dir,
            base=base,
            head=base,
            tree=start.tree,
            max_bytes=plan.max_file_bytes,
            repo=plan.repo,
            admin=admin,
        )
        workspace.setup = plan.setup
        workspace.started_clean = not start.made
        workspace.start_parent = plan.head if start.made else None
        workspace.note_left_out(start, "the run's first commit (the checkout as it was)")
        workspace.linked = await _link(plan, path)
        workspace.excluded += workspace.linked
        workspace.workdir.mkdir(parents=True, exist_ok=True)
        register(plan.common_dir, run_id, run_dir)
        if plan.setup:
            extra = (plan.common_dir, *(plan.repo / name for name in workspace.linked))
            await _run_setup(plan.setup, workspace.workdir, extra, run_dir, boundary)
        else:  # checked out at the start commit, and nothing has run in it
            workspace.fresh = workspace.untouched = True
        return workspace
    except BaseException:  # failed or stopped (Ctrl-C) half way: nothing left behind
        with anyio.CancelScope(shield=True):
            if "admin" in made and not finished:
                await discard(made["admin"], path)  # registered, never checked out
            await remove_worktree(user, path, branch)
        raise


async def _link(plan: WorkspacePlan, worktree: Path) -> list[str]:
    """Link the checkout's ignored ``plan.links`` into ``worktree``: the paths linked."""
    assert plan.repo is not None
    return _make_links(plan.repo, worktree, plan.links)


def _make_links(repo: Path, worktree: Path, names: tuple[str, ...]) -> list[str]:
    linked = []
    for name in names:
        source, target = repo / name, worktree / name
        if not os.path.lexists(source) or os.path.lexists(target):
            continue  # nothing to link, or the worktree has it (tracked)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source, target_is_directory=source.is_dir())
        linked.append(name)
    return linked


async def _run_setup(
    command: str,
    workdir: Path,
    writable: tuple[Path, ...],
    run_dir: Path,
    boundary: SetupBoundary,
) -> None:
    """Run ``workspace_setup`` once in the new worktree, inside the run's boundary; its
    output (both streams, secrets redacted) goes to the run directory."""
    log = run_dir / SETUP_LOG
    env = boundary(workdir, writable, run_dir)
    try:
        done = await env.run(command, cwd=workdir, stdout_path=log, stderr_path=log)
    finally:
        redact.scrub_files([log])  # no await: nothing can cancel it
    if done.returncode != 0:
        note = env.note(done)
        raise WorkspaceError(
            f"workspace_setup {command!r} failed (exit {done.returncode}) in {workdir}; "
            f"its output is in {log}" + (f" {note}" if note else "")
        )


async def remove_worktree(user: Git, path: Path, branch: str) -> None:
    """Remove a run's worktree, its branch and its line in the repository's registry of
    runs (best effort: a failure of git leaves them)."""
    unregister(path.parents[2], path.name)  # common_dir / "attractor" / "worktrees" / id
    await user.run("worktree", "remove", "--force", str(path), check=False)
    await user.run("branch", "-D", "--quiet", branch, check=False)


async def _create_snapshot(plan: WorkspacePlan, run_dir: Path, run_id: str) -> Workspace:
    git_dir = run_dir / SNAPSHOT_GIT_DIR
    umask = 0o077 if run_file_mode() == 0o600 else -1
    env = {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(plan.workdir)}
    git = Git(plan.workdir, env, umask)
    await git.run("init", "--quiet", "--template=")
    await git.run("symbolic-ref", "HEAD", "refs/heads/" + branch_of(run_id))
    # No core.worktree: every command names the work tree, which may move with a resume.
    await git.run("config", "--unset", "core.worktree", check=False)
    workspace = Workspace(
        mode="snapshot",
        run_id=run_id,
        git=git,
        work_tree=plan.workdir,
        workdir=plan.workdir,
        common_dir=git_dir,
        base="",
        head="",
        max_bytes=plan.max_file_bytes,
    )
    workspace.excluded = run_exclusions(plan.workdir, run_dir)
    text = message(
        "attractor: the workdir when the run started",
        {f"{TRAILER}-Run": run_id, f"{TRAILER}-Kind": "start"},
    )
    saved = await commit_work_tree(
        git,
        plan.workdir,
        None,
        None,
        text,
        excluded=workspace.excluded,
        max_bytes=plan.max_file_bytes,
    )
    await git.run("update-ref", "refs/heads/" + branch_of(run_id), saved.commit)
    workspace.base = workspace.head = saved.commit
    workspace.tree = saved.tree
    workspace.note_left_out(saved, "the run's first commit (the workdir as it was)")
    return workspace


async def fork(
    record: dict[str, Any],
    run_id: str,
    commit: str,
    run_dir: Path,
    boundary: SetupBoundary,
) -> dict[str, Any]:
    """The workspace record of a fork: a branch of its own (and a worktree).

    ``record`` is the forked run's (its git directory, for a snapshot, was copied
    into ``run_dir`` with the rest of the run directory). A worktree starts at
    ``commit``. A snapshot's branch starts where the forked run's branch is now,
    as the workdir they share is: the resume then moves it back to ``commit``,
    and only what changed in the workdir since the forked run's last checkpoint
    counts as edits made by hand (the forked run's later stages do not).
    """
    run_id = safe_id(run_id)
    fresh = {k: v for k, v in record.items() if k != "forked_from"}
    if record.get("mode") == "snapshot":
        git_dir = _absolute(run_dir) / SNAPSHOT_GIT_DIR
        env = {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(record["work_tree"])}
        git = Git(Path(str(record["work_tree"])), env, int(record.get("umask", -1)))
        branch = branch_of(run_id)
        _, tip, _ = await git.run(
            "rev-parse", "--verify", "--quiet", f"refs/heads/{record.get('branch')}^{{commit}}",
            check=False,
        )  # fmt: skip
        await git.run("update-ref", "refs/heads/" + branch, tip.strip() or commit)
        await git.run("symbolic-ref", "HEAD", "refs/heads/" + branch)
        fresh.update(run_id=run_id, branch=branch, base=commit)
        fresh.update(git_dir=str(git_dir), common_dir=str(git_dir))
        return fresh
    repo, common = Path(str(record["repo"])), Path(str(record["common_dir"]))
    user = Git(repo, {"GIT_DIR": str(common), "GIT_WORK_TREE": str(repo)})
    run_id = await free_id(user, common, run_id)
    branch = branch_of(run_id)
    path = common / "attractor" / "worktrees" / run_id
    try:
        # As a run's own worktree is made (_create_worktree), and gone again with its
        # branch when the fork cannot finish (a failing workspace_setup).
        admin = str(await add_worktree(common, path, branch, commit, -1))
        sub = Path(str(record["workdir"])).relative_to(Path(str(record["work_tree"])))
        linked = _make_links(repo, path, tuple(str(p) for p in record.get("linked", [])))
        register(common, run_id, run_dir)
        fresh.update(run_id=run_id, branch=branch, base=commit)
        fresh.update(
            work_tree=str(path), workdir=str(path / sub), git_dir=admin, admin=admin, linked=linked
        )
        if record.get("setup"):
            extra = (common, *(repo / name for name in linked))
            await _run_setup(str(record["setup"]), path / sub, extra, _absolute(run_dir), boundary)
        return fresh
    except BaseException:
        with anyio.CancelScope(shield=True):
            await remove_worktree(user, path, branch)
        raise


__all__ = [
    "checkout_commit",
    "create",
    "exclusions",
    "free_id",
    "remove_worktree",
    "run_exclusions",
]
