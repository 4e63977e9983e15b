"""The core loop: run a node, apply its outcome, pick the next node, checkpoint, repeat.

:func:`walk` is the whole traversal algorithm; the helpers below it make each
decision. The same loop runs the main pipeline and, for parallel nodes, each
branch (with its own context clone, stopping at the fan-in node).
"""

from __future__ import annotations

from pathlib import Path

import anyio

from attractor.agent.run_budget import exhausted_reason
from attractor.dot.graph import Node
from attractor.engine import workspace_hooks
from attractor.engine.branch_progress import BranchProgress
from attractor.engine.routing import goal_gate_target, next_step, unsatisfied_goal_gate
from attractor.engine.state import Run, Walk, record_step
from attractor.engine.step import execute_node, is_exhausted, over_limit, visits_reason
from attractor.handlers.base import BranchResult, BranchRunner
from attractor.handlers.context import Context
from attractor.handlers.fidelity import ARRIVAL_KEY, arrival
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.simple import LAST_NODE_KEY, LAST_REASON_KEY
from attractor.valueclass import frozen


@frozen
class WalkEnd:
    """How a traversal ended. ``restart_at`` is set when a loop_restart edge was taken."""

    status: str  # success | fail
    reason: str = ""
    last_node: str | None = None
    last_outcome: Outcome | None = None
    restart_at: str | None = None


async def walk(run: Run, state: Walk, start: str, stop_at: str | None = None) -> WalkEnd:
    """Traverse from ``start`` until an exit, a dead end, a failure or ``stop_at``."""
    node_id = start
    while True:
        state.pending = node_id
        # A step whose handler awaits nothing (simulate, conditional, a cached
        # result) would otherwise never give the event loop a turn: --timeout,
        # signals and serve's cancel are delivered here.
        await anyio.lowlevel.checkpoint()
        node = run.graph.node(node_id)
        if run.is_exit(node_id) and state.branch is None:
            redirect = _goal_gate_redirect(run, state, node)
            if isinstance(redirect, WalkEnd):
                return redirect
            if redirect is not None:
                spun = _spin_end(run, state, node, None, run.graph.node(redirect))
                if spun is not None:
                    return spun
                state.context.set(ARRIVAL_KEY, {"from": node_id})
                node_id = redirect
                record_step(run, node_id)
                continue
        if not run.steps.take():
            return WalkEnd("fail", run.steps.reason(node_id), state.current)
        outcome = await execute_node(run, state, node, _branch_runner(run))
        apply_outcome(state, node, outcome)
        decision = _decide(run, state, node, outcome, stop_at)
        if isinstance(decision, WalkEnd):
            return decision
        node_id = state.pending = decision  # before the journal line, which may fail
        if state.branch is None:
            record_step(run, node_id)
        elif state.on_step is not None:
            state.on_step(state, node_id)


def apply_outcome(state: Walk, node: Node, outcome: Outcome) -> None:
    """Record the node as completed and merge its updates into the context."""
    state.completed.append(node.id)
    if outcome.status != StageStatus.SKIPPED:
        # All a walk keeps of it: its status, which is all goal gates read (a resumed
        # run rebuilds the same from its checkpoint).
        state.statuses[node.id] = outcome.status.value
    state.context.apply(outcome.context_updates)
    state.context.set("outcome", outcome.status.value)
    state.context.set(LAST_NODE_KEY, node.id)
    state.context.set(LAST_REASON_KEY, outcome.failure_reason)
    if outcome.preferred_label:
        state.context.set("preferred_label", outcome.preferred_label)


def _goal_gate_redirect(run: Run, state: Walk, exit_node: Node) -> str | WalkEnd | None:
    """None to exit, a retry target to jump to, or a failed end."""
    gate = unsatisfied_goal_gate(run.graph, state.outcomes)
    if gate is None:
        return None
    target = goal_gate_target(gate, run.graph)
    if target is None:
        status = state.statuses[gate.id]
        reason = f"goal gate {gate.id} is not satisfied ({status}) and has no retry_target"
        return WalkEnd("fail", reason, exit_node.id)
    return target


def _decide(
    run: Run, state: Walk, node: Node, outcome: Outcome, stop_at: str | None
) -> str | WalkEnd:
    """The next node id, or how the traversal ends."""
    budget = run.services.run_budget
    if budget.exhausted:
        return WalkEnd("fail", _budget_reason(run), node.id, outcome)
    if run.is_exit(node.id):
        return WalkEnd("success", "", node.id, outcome)
    step = next_step(node, outcome, state.context)
    if step.target is None:
        return _dead_end(node, outcome)
    if not run.graph.has_node(step.target):
        return _end_at(node, outcome)
    target = run.graph.node(step.target)
    spun = _spin_end(run, state, node, outcome, target)
    if spun is not None:
        return spun
    if step.loop_restart and state.branch is None:
        return WalkEnd("success", "", node.id, outcome, restart_at=target.id)
    if state.branch is not None and (target.id == stop_at or run.is_exit(target.id)):
        return _end_at(node, outcome)  # the branch ends before the fan-in or exit
    # What the next stage's context fidelity reads: the edge it is entered by.
    came = arrival(step.edge) if step.edge is not None else {"from": node.id}
    state.context.set(ARRIVAL_KEY, came)
    return target.id


def _spin_end(
    run: Run, state: Walk, node: Node, outcome: Outcome | None, target: Node
) -> WalkEnd | None:
    """End the traversal instead of going round exhausted nodes forever.

    A node entered more often than max_visits fails without running and its
    failure routes normally (an author may route it to a re-planning node). Two
    moves would only spin: that failure leading straight into an exhausted
    node (itself or another), and entering a node that already had its one
    entry past the limit.
    """
    if over_limit(node, run.graph, state) and is_exhausted(target, run.graph, state):
        reason = outcome.failure_reason if outcome is not None else ""
        return WalkEnd("fail", f"{node.id} failed: {reason}", node.id, outcome)
    if over_limit(target, run.graph, state):
        reason = visits_reason(target, run.graph, state.visits[target.id] + 1)
        return WalkEnd("fail", f"{target.id} failed: {reason}", node.id, outcome)
    return None


def _dead_end(node: Node, outcome: Outcome) -> WalkEnd:
    """The end of a traversal that found no next node.

    A node with no outgoing edge is a terminal (the spec's rule): the run ends
    there as its outcome says. A node whose edges all have conditions, none of
    which held, is not: ending green there would report a pipeline that stopped
    short (a tool printed something unexpected) as succeeded.
    """
    edges = node.outgoing()
    if edges and outcome.status != StageStatus.FAIL:
        conditions = ", ".join(e.condition or "(none)" for e in edges)
        reason = (
            f"stopped at {node.id}: no outgoing edge matched (conditions: {conditions}); "
            f"its outcome was {outcome.status.value}"
        )
        return WalkEnd("fail", reason, node.id, outcome)
    return _end_at(node, outcome)


def _end_at(node: Node, outcome: Outcome) -> WalkEnd:
    """End the traversal at ``node`` as its outcome says."""
    if outcome.status == StageStatus.FAIL:
        reason = outcome.failure_reason or "failed"
        return WalkEnd("fail", f"{node.id} failed: {reason}", node.id, outcome)
    return WalkEnd("success", "", node.id, outcome)


def _budget_reason(run: Run) -> str:
    return exhausted_reason(run.services.run_budget)


def _branch_runner(run: Run) -> BranchRunner:
    return run.branches(run, BranchRunnerImpl(run))


class BranchRunnerImpl:
    """Runs one parallel branch as a sub-traversal with an isolated context.

    With a progress file the branch continues where an earlier run of it
    stopped (see branch_progress.py). ``durable`` and ``keep_rows`` are for a
    branch that runs as a task of its own (the Ray executor): its progress
    reaches the disk, and records its summary rows and its end.
    """

    def __init__(self, run: Run, *, durable: bool = False, keep_rows: bool = False) -> None:
        self.run = run
        self.durable = durable
        self.keep_rows = keep_rows

    async def __call__(
        self, start: str, context: Context, stop_at: str | None, progress: Path | None = None
    ) -> BranchResult:
        store = None
        if progress is not None:
            rows = self.run.node_results if self.keep_rows else None
            store = BranchProgress(progress, durable=self.durable, rows=rows)
        saved = store.load(start) if store is not None else None
        if saved is not None and self.keep_rows:
            self.run.node_results[:0] = saved.rows
        if saved is not None and saved.result is not None:
            return saved.result
        state = saved.walk if saved is not None else Walk(context=context, branch=start)
        first = saved.next_node if saved is not None and saved.next_node else start
        if store is not None:
            state.on_step = store.save
        await workspace_hooks.open_branch_workspace(self.run, state, start)
        end = await walk(self.run, state, first, stop_at)
        result = workspace_hooks.branch_done(state, _branch_result(start, end, state))
        if store is not None:
            store.finish(state, result)
        return result


def _branch_result(start: str, end: WalkEnd, state: Walk) -> BranchResult:
    last = end.last_outcome
    status = last.status.value if last is not None else "fail"
    if end.status == "fail":
        status = StageStatus.FAIL.value
    return BranchResult(
        id=start,
        status=status,
        notes=last.notes if last is not None else "",
        failure_reason=end.reason,
        last_response=state.context.get_string("last_response"),
        last_node=end.last_node or "",
    )
