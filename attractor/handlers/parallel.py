"""Fan-out (parallel) and fan-in handlers.

A parallel node starts one branch per outgoing edge. Each branch runs with an
isolated clone of the context, as a sub-traversal from the edge's target until
it reaches the fan-in node (shape tripleoctagon) or a dead end. Branches run in
an anyio task group, at most ``max_parallel`` at once. With ``join_policy=
first_success`` the other branches are cancelled as soon as one succeeds. The
branch results go into ``parallel.results`` and the run continues at the fan-in.
"""

from __future__ import annotations

import os
import re
import time
from collections import deque
from pathlib import Path

import anyio

from attractor import heap
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
#: Branches started at once from which their starts hold the garbage collector
#: back until the loop idles (attractor/heap.py): a burst of that size allocates
#: enough to trigger collections among the starts.
BURST = 16


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
        max_parallel = int(node.get("max_parallel"))
        kept = BranchStore(env)
        results: dict[int, BranchResult] = kept.finished(targets)
        started = time.monotonic()
        env.emit(ParallelStarted(node=node.id, branch_count=len(targets)))
        ok = ("success", "partial_success")
        won = first_success and any(r.status in ok for r in results.values())
        left = 0 if won else len(targets) - len(results)
        # None when every branch may run at once: nothing to wait for before a start.
        limiter = anyio.CapacityLimiter(max_parallel) if max_parallel < left else None
        # A burst of starts: the collector waits for the loop's first idle moment.
        pause = heap.Pause() if min(left, max_parallel) >= BURST else None

        async def run_one(
            index: int, target: str, branch_context: Context
        ) -> tuple[BranchResult, float]:
            """The branch's result and how long it took."""
            env.emit(ParallelBranchStarted(node=node.id, branch=target, index=index))
            t0 = time.monotonic()
            progress = kept.progress_file(index)
            result = await env.run_branch(target, branch_context, fan_in, progress)
            return result, time.monotonic() - t0

        async def branch(index: int, target: str, branch_context: Context) -> None:
            nonlocal left
            if limiter is None:
                result, took = await run_one(index, target, branch_context)
            else:
                async with limiter:
                    result, took = await run_one(index, target, branch_context)
            results[index] = result
            kept.save(index, result)
            succeeded = result.status in ok
            env.emit(
                ParallelBranchCompleted(
                    node=node.id,
                    branch=target,
                    index=index,
                    duration=took,
                    success=succeeded,
                )
            )
            left -= 1
            if pause is not None and not left:
                pause.end()  # nothing left to start or to wait for
            if succeeded and first_success:
                group.cancel_scope.cancel()

        try:
            async with anyio.create_task_group() as group:
                if pause is not None:
                    group.start_soon(pause.watch)
                for index, edge in enumerate(node.outgoing()):
                    if index not in results and not won:  # finished before a resume: kept
                        group.start_soon(branch, index, edge.target, _branch_context(context, edge))
        finally:
            if pause is not None:
                pause.end()
        ordered = [results.get(i) or _cancelled(t) for i, t in enumerate(targets)]
        return _join(node, ordered, first_success, fan_in, env, time.monotonic() - started)


class BranchStore:
    """Each finished branch's result, in the parallel node's folder (``branches/``).

    A run stopped during a parallel node runs that attempt again on resume; the
    attempt's earlier files (moved aside to ``vVISIT-aATTEMPT``, or
    ``vVISIT-aATTEMPT-N`` for the N-th start of one attempt, see
    :mod:`attractor.store.attempts`; the latest of them) then say which branches had
    finished, and
    only the others run, each from where its progress file (``INDEX.progress.json``,
    written by the branch runner) says it stopped. A later visit or retry runs
    every branch from its start.
    """

    def __init__(self, env: StageEnv) -> None:
        self.folder = env.stage_dir / BRANCHES
        #: The folders earlier starts of this attempt left, newest first.
        starts = _earlier_starts(env.stage_dir, env.visit, env.attempt)
        self.earlier = [folder / BRANCHES for folder in starts]
        self.sync_later = env.services.sync_later
        self._folder_made = False

    def finished(self, targets: list[str]) -> dict[int, BranchResult]:
        found: dict[int, BranchResult] = {}
        for index, target in enumerate(targets):
            # The newest start that kept anything of this branch says where it is (a start
            # cut short while it carried the branches over kept only some of them).
            for folder in self.earlier:
                if (folder / f"{index}.json").exists():
                    result = self._result(folder / f"{index}.json")
                    if result is not None and result.id == target:
                        found[index] = result
                        self.save(index, result)
                    break
                if (folder / f"{index}{PROGRESS_SUFFIX}").exists():
                    self._carry_progress(folder, index)
                    break
        return found

    def progress_file(self, index: int) -> Path:
        """Where branch ``index`` keeps its progress (see engine/branch_progress.py)."""
        return self.folder / f"{index}{PROGRESS_SUFFIX}"

    @staticmethod
    def _result(path: Path) -> BranchResult | None:
        try:  # a branch whose file is damaged runs again
            data = loads_json(read_bounded(path, STATE_LIMIT, "branch file"), path, "branch")
            return BranchResult(**{k: str(v) for k, v in data.items()})
        except (InputFileError, ValueError, TypeError, AttributeError):
            return None

    def _carry_progress(self, earlier: Path, index: int) -> None:
        """The interrupted attempt's progress of an unfinished branch, for this attempt."""
        name = f"{index}{PROGRESS_SUFFIX}"
        try:  # a damaged progress file: the branch starts over
            text = read_bounded(earlier / name, STATE_LIMIT, "branch progress file")
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


def _earlier_starts(stage_dir: Path, visit: int, attempt: int) -> list[Path]:
    """The folders earlier starts of this attempt were moved to, newest first: ``vV-aA``,
    then ``vV-aA-2``, ``-3``... for each time a stop cut it short again."""
    name = f"v{visit}-a{attempt}"
    pattern = re.compile(rf"^{re.escape(name)}(?:-(\d+))?$")
    try:
        names = [entry.name for entry in os.scandir(stage_dir)]
    except OSError:
        return []
    runs = sorted((int(m[1] or 1) for n in names if (m := pattern.match(n))), reverse=True)
    return [stage_dir / (f"{name}-{run}" if run > 1 else name) for run in runs]


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
