"""Where the engine meets the run's workspace (attractor.workspace): a few small hooks.

- :func:`open_workspace`: a new run gets its worktree or snapshot; a resumed
  or continued one gets its files back as the state it continues from says
  (the commit in the context key :data:`COMMIT_KEY`, journaled with each step,
  so ``resume``, ``--retry-failed`` and ``--from`` restore the files as they
  restore the context). Edits made by hand since the last checkpoint are
  committed first; what an interrupted stage left is kept under a lost ref,
  named in the output with its files (after a crash mid-stage, edits made by
  hand since are in it too: the two cannot be told apart).
- :func:`before_attempt` / :func:`after_attempt`: the checkpoint of changes made
  outside a stage, then the stage's own checkpoint commit (node, visit,
  attempt and status as trailers). Its SHA goes to the journal line (context
  and ``commit``), the results.jsonl row and status.json.
- :func:`summary`: the end-of-run lines (branch, commits, files, how to take it).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from attractor.errors import AttractorError
from attractor.handlers.base import BranchResult
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.workspace.names import COMMIT_KEY, SNAPSHOT_GIT_DIR, START_KEY, TRAILER

# The workspace's git machinery is imported where a workspace exists: a run with
# ``--workspace none`` never loads it.
if TYPE_CHECKING:
    from attractor.agent.checkout import Checkout
    from attractor.dot.graph import Node
    from attractor.engine.executor import RunOptions
    from attractor.engine.setup import RunSetup
    from attractor.engine.state import Run, Walk
    from attractor.proc.environment import LocalEnvironment
    from attractor.settings import Settings
    from attractor.workspace.create import SetupBoundary
    from attractor.workspace.preflight import WorkspacePlan
    from attractor.workspace.workspace import Workspace

#: In the run directory while a stage that may change files runs: a resume then
#: knows the work tree holds that stage's half-done edits, not edits made by hand.
MARKER = "workspace-stage.json"
#: Handler types whose stage runs other stages (parallel branches, a child run, a
#: sub-pipeline), each of them checkpointed on its own.
COMPOSITE = frozenset({"parallel", "stack.manager_loop", "subgraph"})


async def open_workspace(
    plan: WorkspacePlan | None, setup: RunSetup, settings: Settings
) -> Workspace | None:
    """The run's workspace, ready for its next stage (None: ``--workspace none``).

    ``settings``: the run's, whose boundary its ``workspace_setup`` runs in.
    """
    context = setup.main.context
    boundary = setup_boundary(settings)
    if setup.resumed:
        return await _reopen(plan, setup, boundary)
    if plan is None or plan.mode == "none":
        setup.manifest["workspace"] = {"mode": "none"}
        return None
    if plan.shared is not None:  # a child run: the parent's workspace, as it is now
        setup.manifest["workspace"] = {**plan.shared.record(), "shared": True}
        context.set(COMMIT_KEY, plan.shared.head)
        return plan.shared
    from attractor.workspace.create import create, safe_id
    from attractor.workspace.workspace import branch_of

    name = setup.run_dir.path.name
    workspace = await create(plan, setup.run_dir.path, name, boundary)
    if workspace.run_id != safe_id(name):
        setup.warnings.append(
            f"branch {branch_of(safe_id(name))} belongs to another run of this repository; "
            f"this run's branch is {workspace.branch}"
        )
    setup.manifest["workspace"] = workspace.record()
    context.set(COMMIT_KEY, workspace.head)
    return workspace


def setup_boundary(settings: Settings) -> SetupBoundary:
    """Where ``workspace_setup`` runs: the run's own boundary (its sandbox, network, env and
    writable settings; no node's), with the worktree, its git directory and the linked
    environments writable, as a stage's command in it would have them."""
    from attractor.handlers.boundary import environment_for

    def environment(workdir: Path, writable: tuple[Path, ...], run_dir: Path) -> LocalEnvironment:
        extra = (*settings.writable, *(str(p) for p in writable))
        own = dataclasses.replace(settings, writable=extra)
        return environment_for(None, own, workdir, base=workdir, run_dir=run_dir)

    return environment


async def _reopen(
    plan: WorkspacePlan | None, setup: RunSetup, boundary: SetupBoundary
) -> Workspace | None:
    if plan is not None and plan.shared is not None:  # a child run resumed by its parent
        setup.main.context.set(COMMIT_KEY, plan.shared.head)
        return plan.shared
    record = setup.manifest.get("workspace")
    if not isinstance(record, dict) or record.get("mode") in (None, "none"):
        return None
    if plan is not None and plan.mode == "none":
        setup.warnings.append("--workspace none: the run's files are not restored or checkpointed")
        return None
    if record.get("mode") == "snapshot":
        record = _snapshot_where(record, _snapshot_home(setup), plan)
    from attractor.workspace.create import fork
    from attractor.workspace.workspace import reopen

    context = setup.main.context
    forked = bool(record.get("forked_from"))
    if forked:  # attractor fork: a branch (and worktree) of its own
        at = context.get_string(COMMIT_KEY) or str(record.get("base"))
        record = await fork(record, setup.run_dir.path.name, at, setup.run_dir.path, boundary)
        setup.manifest["workspace"] = record
        setup.warnings.append(f"the fork works on branch {record['branch']}, from {at[:12]}")
    workspace = reopen(record, plan.max_file_bytes if plan else None)
    removed = workspace.clear_stale_locks()
    if removed:
        setup.warnings.append(
            f"removed {', '.join(removed)} in the run's git directory, left by a git "
            "command killed with the run"
        )
    workspace.head = await workspace.tip()
    target = context.get_string(COMMIT_KEY) or workspace.head
    if setup.continuation.startswith("retry_failed:"):
        target = context.get_string(START_KEY) or target
    marker = setup.run_dir.path / MARKER
    inner = _child_markers(setup)
    # A stage caught running (here, or in the child run of the stage resumed), or a
    # move of the files cut short: the work tree holds half-done work, which is not
    # to be taken for edits made by hand.
    caught = marker.exists() or bool(inner) or workspace.was_moving()
    hand = None if caught else await _save_hand_edits(workspace, setup)
    if hand is not None and not setup.continuation:
        target = hand  # the run goes on with them
    if not setup.continuation and hand is None and _resumes_inside_composite(setup):
        # The stage goes on inside (a child run resumes after its completed steps),
        # and those steps checkpointed on this branch after the run's last checkpoint.
        target = workspace.head
    why = setup.continuation or "resume"
    # A fork's files as its run left them are on that run's branch already.
    kept = await workspace.restore(target, why, keep=not forked or hand is not None)
    marker_node = _marker_node(marker)
    if marker_node is None and inner:
        marker_node = f"{setup.start}/{_marker_node(inner[0])}"
    for done in (marker, *inner):
        done.unlink(missing_ok=True)
    if kept is not None:
        setup.warnings.append(await _kept_line(workspace, target, kept, caught, marker_node))
    if hand is not None and setup.continuation:
        await _reapply(workspace, hand, setup)
    context.set(COMMIT_KEY, workspace.head)
    return workspace


async def _save_hand_edits(workspace: Workspace, setup: RunSetup) -> str | None:
    """Commit what changed in the work tree since the last checkpoint (the run stopped
    between stages, or put its stage back itself): the commit, None when nothing did."""
    saved = await workspace.checkpoint(
        "attractor: edits made by hand since the last checkpoint",
        {f"{TRAILER}-Kind": "hand-edits"},
    )
    if not saved.made:
        return None
    setup.warnings.append(
        f"saved the edits made by hand in {workspace.work_tree} since the last "
        f"checkpoint as commit {saved.commit[:12]} on {workspace.branch}"
    )
    return saved.commit


def _marker_node(marker: Path) -> str | None:
    """The node the marker names ("" when it is damaged; None when there is none)."""
    if not marker.exists():
        return None
    try:
        node = json.loads(marker.read_text()).get("node")
    except (OSError, ValueError, AttributeError):
        return ""
    return str(node or "")


async def _kept_line(
    workspace: Workspace, target: str, kept: str, caught: bool, node: str | None
) -> str:
    """What the output says of a lost ref: what is in it, and how to take it back."""
    if not caught:
        return (
            f"the workspace went back to {target[:12]}; the later checkpoints it drops are "
            f"kept as {kept}: git show {kept}"
        )
    from attractor.workspace.commits import changed_paths

    files = await changed_paths(workspace.git, target, "refs/" + kept)
    shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10 else "")
    if node is not None:
        stage = f"the interrupted stage {node}" if node else "the interrupted stage"
        what = f"{stage} starts again from the files as they were when it began"
        half = "the stage's half-done files"
    else:
        what = "a restore or merge of the files was cut short; they went back"
        half = "the half-moved files"
    return (
        f"{what} ({target[:12]}); what the work tree held is kept as {kept} "
        f"({shown or 'no file'}): {half}, and any edits made by hand since the run was "
        f"killed, which cannot be told apart from them; git show {kept}, or take a file "
        f"back with git checkout {kept} -- FILE"
    )


def _child_markers(setup: RunSetup) -> list[Path]:
    """The stage markers left in the child runs of the composite stage the run resumes
    inside (a sub-pipeline's, a manager's, theirs in turn): a step of theirs that was
    caught running."""
    if not _resumes_inside_composite(setup):
        return []
    from attractor.handlers.manager import CHILDREN

    stage = setup.run_dir.stage_dir(setup.start)  # there already: the stage was running
    managed = setup.run_dir.path / CHILDREN
    roots = [stage]
    if managed.is_dir():  # the node's first child run, or a later visit's or attempt's
        own = re.compile(rf"{re.escape(stage.name)}(-v\d+-a\d+)?")
        roots += [p for p in managed.iterdir() if own.fullmatch(p.name)]
    return [found for root in roots if root.is_dir() for found in sorted(root.rglob(MARKER))]


def _resumes_inside_composite(setup: RunSetup) -> bool:
    """The run stopped inside a stage made of stages that checkpoint themselves (a
    sub-pipeline or a manager's child run, in this workspace)."""
    node = setup.graph.node(setup.start) if setup.graph.has_node(setup.start) else None
    return node is not None and node.handler_type in COMPOSITE - {"parallel"}


async def _reapply(workspace: Workspace, hand: str, setup: RunSetup) -> None:
    """Put the edits made by hand back on top of the state a continuation went back to."""
    if await workspace.apply(hand):
        saved = await workspace.checkpoint(
            f"attractor: the edits made by hand ({hand[:12]}), applied again",
            {f"{TRAILER}-Kind": "hand-edits"},
        )
        setup.warnings.append(
            f"the edits made by hand are applied again on top of it ({saved.commit[:12]})"
        )
    else:
        setup.warnings.append(
            f"the edits made by hand do not apply where the run went back to; they are "
            f"in commit {hand[:12]}: git cherry-pick {hand[:12]} in {workspace.work_tree}"
        )


async def put_back_stopped_stage(run: Run) -> None:
    """A run stopped inside a stage: its work tree goes back to where the stage began.

    What the stage had done is kept under a lost ref (named in the run's
    warnings), so edits made by hand before the resume are told apart from it.
    After a crash (SIGKILL) the resume does this instead.
    """
    workspace = run.workspace
    marker = run.run_dir.path / MARKER
    if workspace is None or not marker.exists():
        return
    try:
        start = str(json.loads(marker.read_text())["start"])
    except (OSError, ValueError, KeyError, TypeError):
        return  # the resume puts it back (a damaged marker counts as a crash)
    with anyio.CancelScope(shield=True):
        kept = await workspace.restore(start, "stopped")
    marker.unlink(missing_ok=True)
    if kept is not None:
        workspace.notes.append(
            f"the stopped stage's files went back to {start[:12]}, where it began; "
            f"what it had done is kept as {kept}: git show {kept}"
        )


def _snapshot_home(setup: RunSetup) -> Path:
    """The run directory that holds the snapshot's git directory: this one, or for one
    a ``loop_restart`` went on in, the first run's (beside it: each records the one it
    restarted from)."""
    from attractor.store.rundir import read_manifest

    here = setup.run_dir.path.resolve()
    folder, manifest, seen = here, setup.manifest, set()
    while not (folder / SNAPSHOT_GIT_DIR).is_dir():
        before = manifest.get("restarted_from")
        if not isinstance(before, str) or not before or before in seen:
            return here  # the caller says the git directory is gone
        seen.add(before)
        folder = here.parent / before
        try:
            manifest = read_manifest(folder)
        except AttractorError:  # damaged: the chain ends here
            manifest = {}
    return folder


def _snapshot_where(
    record: dict[str, Any], run_dir: Path, plan: WorkspacePlan | None
) -> dict[str, Any]:
    """A snapshot's git directory is the run directory's (wherever it is now), and its
    work tree the workdir the resume runs in."""
    git_dir = str(run_dir.resolve() / SNAPSHOT_GIT_DIR)
    where = {"git_dir": git_dir, "common_dir": git_dir}
    if plan is not None:
        where.update(work_tree=str(plan.workdir), workdir=str(plan.workdir))
    return {**record, **where}


def with_workspace(options: RunOptions, workspace: Workspace | None) -> RunOptions:
    """``options`` for the run once its workspace is open.

    A sandboxed step may write what it needs of a worktree
    (:func:`with_workspace_paths`), and a child run a manager starts works in
    this same workspace: from the parent's current commit, its commits on the
    parent's branch.
    """
    if workspace is None:
        return options
    from attractor.workspace.preflight import WorkspacePlan

    settings = with_workspace_paths(options.settings, workspace)
    shared = WorkspacePlan("shared", "the parent run's", workspace.workdir, shared=workspace)
    return dataclasses.replace(options, settings=settings, workspace=shared)


def with_workspace_paths(settings: Settings, workspace: Workspace | None) -> Settings:
    """``settings`` with what a sandboxed step needs of a worktree made writable.

    The repository's git directory (so an agent's own ``git commit`` in the
    worktree works; the sandbox keeps its control files read-only, see
    attractor.proc.gitguard) and the checkout's linked paths (a link is shared
    with the checkout; see attractor.workspace.create).
    """
    if workspace is None or workspace.repo is None:
        return settings
    paths = [str(workspace.common_dir)]
    paths += [str(workspace.repo / name) for name in workspace.linked]
    return dataclasses.replace(settings, writable=(*settings.writable, *paths))


def restarted(workspace: Workspace | None, setup: RunSetup) -> None:
    """A loop_restart's new run directory goes on in the same workspace."""
    if workspace is not None:
        setup.manifest["workspace"] = workspace.record()
        setup.main.context.set(COMMIT_KEY, workspace.head)


async def before_attempt(run: Run, walk: Walk, node: Node, attempt: int) -> None:
    """Commit changes made outside a stage; note the stage as running."""
    workspace = walk.workspace or run.workspace
    if workspace is None:
        return
    with anyio.CancelScope(shield=True):  # a commit cut short would leave index.lock
        await workspace.checkpoint(
            f"attractor: changes made outside a stage, before {node.id}",
            {f"{TRAILER}-Kind": "outside", f"{TRAILER}-Node": node.id},
        )
    if attempt == 1 or not walk.context.get_string(START_KEY):
        walk.context.set(START_KEY, workspace.head)
    _set(walk, workspace.head)
    # Not for a stage made of stages: those keep their own progress, and each inner
    # stage marks itself; putting the whole composite back would undo completed work.
    if node.handler_type in COMPOSITE:
        return
    if walk.branch is None:
        (run.run_dir.path / MARKER).write_text(
            json.dumps({"node": node.id, "attempt": attempt, "start": workspace.head}) + "\n"
        )
    elif walk.workspace is not None:  # a branch's worktree is its own: so is its mark
        walk.workspace.mark_stage(node.id, attempt)


async def after_attempt(run: Run, walk: Walk, node: Node, attempt: int, outcome: Outcome) -> None:
    """The stage's checkpoint commit; its SHA and files go into the outcome's status.json."""
    workspace = walk.workspace or run.workspace
    if workspace is None:
        return
    visit = walk.visits[node.id]
    trailers: dict[str, str | int] = {
        f"{TRAILER}-Node": node.id,
        f"{TRAILER}-Visit": visit,
        f"{TRAILER}-Attempt": attempt,
        f"{TRAILER}-Status": outcome.status.value,
    }
    if walk.branch is not None:
        trailers[f"{TRAILER}-Branch"] = walk.branch
    subject = f"attractor: {node.id} (visit {visit}, attempt {attempt}) {outcome.status.value}"
    with anyio.CancelScope(shield=True):
        saved = await workspace.checkpoint(subject, trailers)
    # Until the next stage starts only the engine runs: that stage's look for changes
    # made outside one finds nothing, unless something clears this first (unsettle).
    workspace.fresh, workspace.untouched = True, False
    if walk.branch is None:
        (run.run_dir.path / MARKER).unlink(missing_ok=True)
    elif walk.workspace is not None:
        walk.workspace.clear_stage_mark()
    _set(walk, saved.commit)
    outcome.details["files_changed"] = list(saved.files)
    outcome.details["start_commit"] = walk.context.get_string(START_KEY) or saved.commit


def unsettle(run: Run, walk: Walk) -> None:
    """The work tree may change before the next checkpoint (a stage runs without one, or
    the engine waits before a retry): that checkpoint looks for changes again."""
    workspace = walk.workspace or run.workspace
    if workspace is not None:
        workspace.fresh = workspace.untouched = False


def untouched_checkout(run: Run, walk: Walk) -> Checkout | None:
    """The stage's work tree as the engine checked it out, when nothing has run in it
    since (the first stage of a parallel branch): its session's look at git is shared."""
    workspace = walk.workspace or run.workspace
    if workspace is None or not workspace.untouched:
        return None
    from attractor.agent.checkout import Checkout

    return Checkout(workspace.work_tree, workspace.branch, workspace.head)


def stage_commit(run: Run, walk: Walk, outcome: Outcome) -> str | None:
    """The stage's commit for its row and status.json (the last checkpoint when it
    changed nothing)."""
    workspace = walk.workspace or run.workspace
    if workspace is None:
        return None
    _set(walk, workspace.head)
    outcome.details["commit"] = workspace.head
    return workspace.head


async def open_branch_workspace(run: Run, walk: Walk, branch: str) -> None:
    """A parallel branch works in a worktree of its own, from the fan-out's commit."""
    main = run.workspace
    if main is None or walk.workspace is not None:
        return
    from attractor.workspace.branches import open_branch

    with anyio.CancelScope(shield=True):  # a resumed branch: back to its last checkpoint
        own = await open_branch(main, branch, walk.context.get_string(COMMIT_KEY) or None)
    walk.workspace = own
    walk.services = dataclasses.replace(run.services, base_workdir=own.workdir)
    _set(walk, own.head)


def branch_done(walk: Walk, result: BranchResult) -> BranchResult:
    """The branch's result with its last commit, for the fan-in to merge."""
    if walk.workspace is None:
        return result
    return dataclasses.replace(result, commit=walk.workspace.head)


async def fan_in(run: Run, walk: Walk, node: Node, outcome: Outcome) -> Outcome:
    """At a fan-in, merge the branches' changes by its ``merge`` policy (all, selected, none).

    A conflict leaves the files as they were and ends the fan-in as failed, with
    ``workspace.merge=conflict`` and the files in ``workspace.conflicts`` for the
    edges to route on (and in status.json).
    """
    main = run.workspace
    if main is None or node.handler_type != "parallel.fan_in" or walk.branch is not None:
        return outcome
    from attractor.workspace.branches import close_branch, merge_branches

    results = walk.context.get("parallel.results")
    rows = [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []
    policy = str(node.get("merge") or "all")
    best = outcome.context_updates.get("parallel.fan_in.best_id")
    ok = ("success", "partial_success")
    chosen = [
        (str(r["id"]), str(r["commit"]))
        for r in rows
        if r.get("commit")
        and r.get("status") in ok
        and (policy == "all" or (policy == "selected" and r.get("id") == best))
    ]
    with anyio.CancelScope(shield=True):  # the merge is all or nothing: never cut short
        await main.checkpoint(
            f"attractor: changes made outside a stage, before {node.id}",
            {f"{TRAILER}-Kind": "outside", f"{TRAILER}-Node": node.id},
        )
        merge = await merge_branches(main, chosen, node.id) if chosen else None
        for row in rows:
            await close_branch(main, str(row.get("id")))
    if merge is None:
        outcome.context_updates["workspace.merge"] = "none" if policy == "none" else "nothing"
        return outcome
    if not merge.conflicts:
        outcome.context_updates["workspace.merge"] = "merged"
        outcome.details["merged"] = merge.merged
        return outcome
    files = ", ".join(merge.conflicts)
    return dataclasses.replace(
        outcome,
        status=StageStatus.FAIL,
        failure_reason=f"merging branch {merge.conflict_with} conflicts in {files}",
        context_updates={
            **outcome.context_updates,
            "workspace.merge": "conflict",
            "workspace.conflicts": list(merge.conflicts),
        },
        details={**outcome.details, "conflicts": list(merge.conflicts)},
    )


def _set(walk: Walk, commit: str) -> None:
    if walk.context.get_string(COMMIT_KEY) != commit:
        walk.context.set(COMMIT_KEY, commit)


async def summary(workspace: Workspace | None, mode_none: bool) -> dict[str, Any] | None:
    """What the run did to its files, for the end-of-run lines and the result."""
    if workspace is None:
        return {"mode": "none"} if mode_none else None
    from attractor.workspace.commits import changed_paths

    with anyio.CancelScope(shield=True):
        head = await workspace.tip()
        count = "0"  # a run that changed nothing asks git nothing
        if head != workspace.base:
            count = await workspace.git.out("rev-list", "--count", f"{workspace.base}..{head}")
        files = await changed_paths(workspace.git, workspace.base, head)
    data: dict[str, Any] = {
        "mode": workspace.mode,
        "branch": workspace.branch,
        "commits": int(count or 0),
        "files": len(files),
        "head": head,
        "base": workspace.base,
        "work_tree": str(workspace.work_tree),
        "notes": list(workspace.notes),
    }
    if workspace.mode == "worktree":
        data["repo"] = str(workspace.repo)
        data["take"] = f"git merge {workspace.branch}"
        with anyio.CancelScope(shield=True):
            start = await _uncommitted_start(workspace, head)
        if start is not None:
            # The branch begins with a commit of the changes the checkout still holds
            # uncommitted: git merge would refuse to overwrite them. Their diff applies.
            data["uncommitted_start"] = start
            repo = workspace.repo
            data["take"] = (
                f"git -C {repo} diff --binary {start[:12]} {workspace.branch} | git -C {repo} apply"
            )
    return data


async def _uncommitted_start(workspace: Workspace, head: str) -> str | None:
    """The commit of the checkout's uncommitted changes the run's branch starts from,
    when the checkout's HEAD does not have it (None: the run started from HEAD)."""
    if workspace.started_clean:  # no such commit was made: no need to ask git
        return None
    if workspace.start_parent is not None:
        from attractor.workspace.refs import resolve_head

        # The checkout's HEAD has not moved since this process committed its changes
        # on top of it: it cannot hold that commit (the branch's first).
        if resolve_head(workspace.common_dir, workspace.common_dir) == workspace.start_parent:
            return workspace.base
    user = workspace.git.with_env(GIT_DIR=str(workspace.common_dir))
    code, out, _ = await user.run(
        "rev-list", "-n1", f"--grep=^{TRAILER}-Kind: start$", head, "--not", "HEAD",
        check=False,
    )  # fmt: skip
    return out.strip() or None if code == 0 else None
