"""Fan-out (parallel) and fan-in handlers.

A parallel node starts one branch per outgoing edge. Each branch runs with an
isolated clone of the context, as a sub-traversal from the edge's target until
it reaches the fan-in node (shape tripleoctagon) or a dead end. Branches run in
an anyio task group, at most ``max_parallel`` at once. With ``join_policy=
first_success`` the other branches are cancelled as soon as one succeeds. The
branch results go into ``parallel.results`` and the run continues at the fan-in.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path

import anyio

from attractor.dot.graph import Edge, Graph, Node
from attractor.errors import InputFileError
from attractor.events import (
    ParallelBranchCompleted,
    ParallelBranchStarted,
    ParallelCompleted,
    ParallelStarted,
)
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import STATE_LIMIT, read_bounded
from attractor.fileio.writes import atomic_write_json, atomic_write_text, run_dir_mode
from attractor.handlers.base import BranchResult, StageEnv
from attractor.handlers.context import Context
from attractor.handlers.fidelity import ARRIVAL_KEY, arrival
from attractor.handlers.outcome import Outcome, StageStatus

FAN_IN = "parallel.fan_in"
BRANCHES = "branches"
PROGRESS_SUFFIX = ".progress.json"


def find_fan_in(graph: Graph, node: Node) -> str | None:
    """The nearest fan-in node downstream of ``node`` (breadth first), if any."""
    seen = {node.id}
    queue = deque(e.target for e in node.outgoing())
    while queue:
        current = queue.popleft()
        if current in seen:
            continue
        seen.add(current)
        candidate = graph.node(current)
        if candidate.handler_type == FAN_IN:
            return current
        queue.extend(e.target for e in candidate.outgoing())
    return None


class ParallelHandler:
    """Runs the outgoing branches concurrently and joins them by the node's policy."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        targets = [e.target for e in node.outgoing()]
        if not targets:
            return Outcome.fail(f"parallel node {node.id} has no outgoing branches")
        fan_in = find_fan_in(graph, node)
        first_success = node.get("join_policy") == "first_success"
        limiter = anyio.CapacityLimiter(int(node.get("max_parallel")))
        kept = BranchStore(env)
        results: dict[int, BranchResult] = kept.finished(targets)
        started = time.monotonic()
        env.emit(ParallelStarted(node=node.id, branch_count=len(targets)))

        async def branch(index: int, target: str, branch_context: Context) -> None:
            async with limiter:
                env.emit(ParallelBranchStarted(node=node.id, branch=target, index=index))
                t0 = time.monotonic()
                progress = kept.progress_file(index)
                result = await env.run_branch(target, branch_context, fan_in, progress)
            results[index] = result
            kept.save(index, result)
            ok = result.status in ("success", "partial_success")
            env.emit(
                ParallelBranchCompleted(
                    node=node.id,
                    branch=target,
                    index=index,
                    duration=time.monotonic() - t0,
                    success=ok,
                )
            )
            if ok and first_success:
                group.cancel_scope.cancel()

        ok = ("success", "partial_success")
        won = first_success and any(r.status in ok for r in results.values())
        async with anyio.create_task_group() as group:
            for index, edge in enumerate(node.outgoing()):
                if index not in results and not won:  # finished before a resume: kept
                    group.start_soon(branch, index, edge.target, _branch_context(context, edge))
        ordered = [results.get(i) or _cancelled(t) for i, t in enumerate(targets)]
        return _join(node, ordered, first_success, fan_in, env, time.monotonic() - started)


class BranchStore:
    """Each finished branch's result, in the parallel node's folder (``branches/``).

    A run stopped during a parallel node runs that attempt again on resume; the
    attempt's earlier files (moved aside to ``vVISIT-aATTEMPT``, see
    :mod:`attractor.store.attempts`) then say which branches had finished, and
    only the others run, each from where its progress file (``INDEX.progress.json``,
    written by the branch runner) says it stopped. A later visit or retry runs
    every branch from its start.
    """

    def __init__(self, env: StageEnv) -> None:
        self.folder = env.stage_dir / BRANCHES
        self.earlier = env.stage_dir / f"v{env.visit}-a{env.attempt}" / BRANCHES
        self.sync_later = env.services.sync_later
        self._folder_made = False

    def finished(self, targets: list[str]) -> dict[int, BranchResult]:
        found: dict[int, BranchResult] = {}
        if not self.earlier.is_dir():  # no interrupted attempt: nothing to look for per branch
            return found
        for index, target in enumerate(targets):
            path = self.earlier / f"{index}.json"
            try:  # a branch whose file is missing or damaged runs again
                data = loads_json(read_bounded(path, STATE_LIMIT, "branch file"), path, "branch")
                result = BranchResult(**{k: str(v) for k, v in data.items()})
            except (InputFileError, ValueError, TypeError, AttributeError):
                continue
            if result.id == target:
                found[index] = result
                self.save(index, result)
        for index in range(len(targets)):
            if index not in found:
                self._carry_progress(index)
        return found

    def progress_file(self, index: int) -> Path:
        """Where branch ``index`` keeps its progress (see engine/branch_progress.py)."""
        return self.folder / f"{index}{PROGRESS_SUFFIX}"

    def _carry_progress(self, index: int) -> None:
        """The interrupted attempt's progress of an unfinished branch, for this attempt."""
        name = f"{index}{PROGRESS_SUFFIX}"
        try:  # a damaged progress file: the branch starts over
            text = read_bounded(self.earlier / name, STATE_LIMIT, "branch progress file")
        except InputFileError:
            return
        self._make_folder()
        atomic_write_text(self.folder / name, text)

    def save(self, index: int, result: BranchResult) -> None:
        self._make_folder()
        path = self.folder / f"{index}.json"
        atomic_write_json(path, result.to_json(), fsync=self.sync_later is None)
        if self.sync_later is not None:  # synced before the next node that acts
            self.sync_later(path)

    def _make_folder(self) -> None:
        if not self._folder_made:
            self.folder.mkdir(mode=run_dir_mode(), exist_ok=True)
            self._folder_made = True


def _branch_context(context: Context, edge: Edge) -> Context:
    """The isolated context a branch starts with, arriving by its edge."""
    clone = context.clone()
    clone.set(ARRIVAL_KEY, arrival(edge))
    return clone


def branch_values(results: list[BranchResult]) -> dict[str, str]:
    """Each branch's result under its own keys: ``parallel.branch.<id>.status`` and so on."""
    values: dict[str, str] = {}
    for result in results:
        for key, value in result.to_json().items():
            if key != "id":
                values[f"parallel.branch.{result.id}.{key}"] = value
    return values


def _cancelled(target: str) -> BranchResult:
    return BranchResult(
        id=target, status="skipped", notes="cancelled: another branch succeeded first"
    )


def _join(
    node: Node,
    results: list[BranchResult],
    first_success: bool,
    fan_in: str | None,
    env: StageEnv,
    duration: float,
) -> Outcome:
    ok = sum(r.status in ("success", "partial_success") for r in results)
    failed = sum(r.status == "fail" for r in results)
    env.emit(
        ParallelCompleted(node=node.id, duration=duration, success_count=ok, failure_count=failed)
    )
    if ok == 0:
        status = StageStatus.FAIL
    elif first_success or failed == 0:
        status = StageStatus.SUCCESS
    else:
        status = StageStatus.PARTIAL_SUCCESS
    return Outcome(
        status,
        notes=f"{ok} of {len(results)} branches succeeded",
        failure_reason="" if ok else "every parallel branch failed",
        context_updates={
            "parallel.results": [r.to_json() for r in results],
            "parallel.success_count": ok,
            "parallel.failure_count": failed,
            **branch_values(results),
        },
        jump_to=fan_in,
    )
