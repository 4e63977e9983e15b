"""Running one node: visit limit, attempts with retries and backoff, node timeout, events.

Both FAIL and RETRY are retried while attempts remain (``max_retries`` extra
attempts). Once they are used up, RETRY becomes FAIL, or PARTIAL_SUCCESS with
``allow_partial=true``. Exceptions from a handler become FAIL; cancellation
always propagates.
"""

from __future__ import annotations

import time

import anyio

from attractor import redact
from attractor.dot.graph import Graph, Node
from attractor.dot.schema import format_duration
from attractor.engine import workspace_hooks
from attractor.engine.progress import PURE_HANDLERS, has_side_effects
from attractor.engine.retry import policy_for, visit_limit
from attractor.engine.state import NodeResult, Run, Walk, record_step
from attractor.errors import RunError
from attractor.events import StageCompleted, StageFailed, StageRetrying, StageStarted
from attractor.fileio.jsonio import json_lines
from attractor.handlers.base import BranchRunner, StageEnv
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.llm.types import Usage
from attractor.store import status_file


def is_exhausted(node: Node, graph: Graph, walk: Walk) -> bool:
    """True when entering ``node`` again would exceed its visit limit."""
    limit = visit_limit(node, graph)
    return limit is not None and walk.visits[node.id] >= limit


def over_limit(node: Node, graph: Graph, walk: Walk) -> bool:
    """True when ``node`` was entered more often than its visit limit (and so failed)."""
    limit = visit_limit(node, graph)
    return limit is not None and walk.visits[node.id] > limit


def visits_reason(node: Node, graph: Graph, visits: int) -> str:
    return f"entered {visits} times, more than max_visits={visit_limit(node, graph)}"


async def execute_node(run: Run, walk: Walk, node: Node, run_branch: BranchRunner) -> Outcome:
    """Enter ``node`` and run it to a final outcome; records the summary row."""
    walk.current = node.id
    walk.context.set("current_node", node.id)
    walk.visits[node.id] += 1
    index = run.next_index()
    started = walk.entered_at = time.monotonic()
    walk.spent_at_entry = run.services.run_budget.spent
    if over_limit(node, run.graph, walk):
        outcome = Outcome.fail(visits_reason(node, run.graph, walk.visits[node.id]))
        attempts, usage = 0, None
    else:
        outcome, attempts, usage = await _attempts(run, walk, node, index, run_branch)
    redactor = redact.current()
    if redactor is not None:  # before the context, the checkpoint or a later prompt gets it
        outcome = outcome.redacted(redactor)
    duration = time.monotonic() - started
    outcome = await workspace_hooks.fan_in(run, walk, node, outcome)
    commit = workspace_hooks.stage_commit(run, walk, outcome)
    _finish(run, node, index, outcome, attempts, duration, walk.visits[node.id], usage, commit)
    walk.entered_at = None
    if walk.branch is not None and run.progress is not None:
        run.progress.note_spend(run)  # the main traversal journals its own steps
    return outcome


async def _attempts(
    run: Run, walk: Walk, node: Node, index: int, run_branch: BranchRunner
) -> tuple[Outcome, int, Usage | None]:
    """The final outcome, the attempts made and what they all spent (None: no model asked)."""
    policy = policy_for(node, run.graph, run.backoff)
    try:
        handler_type: str | None = run.registry.resolve_type(node)
    except RunError:
        handler_type = None  # _attempt reports the error as the node's failure
    shown = handler_type or "unknown"
    # Failed attempts of this visit made before the run was stopped (restored
    # from the checkpoint on resume); the interrupted attempt runs again.
    attempt = min(walk.retries.get(node.id, 0) + 1, policy.max_attempts)
    acts = has_side_effects(shown, run.services.backend)
    spent: Usage | None = None
    while True:
        if acts and run.progress is not None:
            # What the journal holds must survive a machine crash before the
            # node acts, or a resume would repeat a node that already acted.
            run.progress.sync()
        visit = walk.visits[node.id]
        run.emit(
            StageStarted(name=node.id, index=index, handler=shown, attempt=attempt, visit=visit)
        )
        if acts:
            await workspace_hooks.before_attempt(run, walk, node, attempt)
        elif shown not in PURE_HANDLERS:
            # It runs without checkpoints (a simulated stage): what changes in the files
            # meanwhile is for the next checkpoint to find.
            workspace_hooks.unsettle(run, walk)
        outcome = await _attempt(run, walk, node, attempt, run_branch, handler_type)
        if acts:
            await workspace_hooks.after_attempt(run, walk, node, attempt, outcome)
        spent = _add_usage(spent, outcome)
        if (
            not _retryable(outcome, shown)
            or attempt >= policy.max_attempts
            # Another attempt could not make a model request; the engine ends the
            # run with the budget's reason right after this node.
            or run.services.run_budget.exhausted
        ):
            return _settle(node, outcome, walk), attempt, spent
        delay = policy.backoff.delay_for_attempt(attempt)
        run.emit(StageFailed(name=node.id, index=index, error=_reason(outcome), will_retry=True))
        run.emit(StageRetrying(name=node.id, index=index, attempt=attempt + 1, delay=delay))
        walk.retries[node.id] = attempt
        walk.context.set(f"internal.retry_count.{node.id}", attempt)
        # So a resume after a crash (SIGKILL) also counts these failures. Saved as
        # about to enter the node: a walk continued from here enters it again, and
        # that entry must not count twice (against max_visits above all).
        walk.visits[node.id] -= 1
        try:
            if walk.branch is None:
                record_step(run, node.id)
            elif walk.on_step is not None:
                walk.on_step(walk, node.id)
        finally:
            walk.visits[node.id] += 1
        workspace_hooks.unsettle(run, walk)  # files may change while it waits
        await anyio.sleep(delay)
        attempt += 1


def _add_usage(spent: Usage | None, outcome: Outcome) -> Usage | None:
    """``spent`` plus the usage an attempt reported: a retried attempt's tokens count too."""
    usage = outcome.details.get("usage")
    if not isinstance(usage, dict):
        return spent
    return Usage.from_json(usage) if spent is None else spent + Usage.from_json(usage)


def _retryable(outcome: Outcome, handler_type: str) -> bool:
    # A conditional node reports what happened before it; running it again
    # cannot change that.
    return outcome.status.is_failure and handler_type != "conditional"


def _attempt_timeout(node: Node, handler_type: str | None) -> float | None:
    # A human gate without human.timeout uses its timeout for the question, so
    # that human.default_choice applies; bounding the node too would fail it
    # at the same moment.
    if handler_type == "wait.human" and not node.has("human.timeout"):
        return None
    return node.timeout


async def _attempt(
    run: Run,
    walk: Walk,
    node: Node,
    attempt: int,
    run_branch: BranchRunner,
    handler_type: str | None,
) -> Outcome:
    """One handler call under the node's own timeout; errors become FAIL.

    ``handler_type``: the node's type, None when it has none that resolves.
    """
    stage_dir, created = run.run_dir.open_stage_dir(node.id)
    # A fresh run's first attempt finds an empty folder; anything else may find the
    # files of an earlier attempt (a retry, a loop, the attempt a resume runs again).
    if attempt > 1 or walk.visits[node.id] > 1 or "resumed_at" in run.manifest:
        run.run_dir.begin_attempt(node.id, walk.visits[node.id], attempt)
    env = StageEnv(
        logs_root=run.run_dir.path,
        stage_dir=stage_dir,
        attempt=attempt,
        visit=walk.visits[node.id],
        services=walk.services or run.services,
        run_branch=run_branch,
        branch=walk.branch,
        checkout=workspace_hooks.untouched_checkout(run, walk),
    )
    timeout = _attempt_timeout(node, handler_type)
    # A folder made just now holds no status.json: no need to look.
    before = None if created else status_file.signature(env.stage_dir)
    try:
        if handler_type is None:
            handler = run.registry.resolve(node)  # raises what is wrong with its type
        else:
            handler = run.registry.handler(handler_type, node)
        if timeout is None:  # no cancel scope to enter and leave for nothing
            result = await handler.execute(node, walk.context, run.graph, env)
        else:
            with anyio.move_on_after(timeout) as scope:
                result = await handler.execute(node, walk.context, run.graph, env)
            if scope.cancelled_caught:
                return Outcome.fail(f"timed out after {_as_written(node, timeout)}")
    except Exception as exc:  # the handler contract: any error is a FAIL
        return Outcome.fail(_error_text(exc))
    if status_file.written_by_node(env.stage_dir, before):
        return status_file.apply(env.stage_dir, result)
    return _status_or_auto(node, result)


def _error_text(exc: BaseException) -> str:
    """What went wrong, from the first error inside any task groups that wrapped it."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__


def _as_written(node: Node, timeout: float) -> str:
    """The node's timeout as the author wrote it (``900s`` stays ``900s``)."""
    text = (node.raw("timeout") or "").strip()
    return text or format_duration(timeout)


def _status_or_auto(node: Node, result: Outcome | None) -> Outcome:
    if result is not None:
        return result
    if node.get("auto_status"):
        return Outcome.success("auto-status: handler completed without writing status")
    return Outcome.fail(
        f"the handler of {node.id} reported no status; "
        "set auto_status=true to treat that as success"
    )


def _settle(node: Node, outcome: Outcome, walk: Walk) -> Outcome:
    """The final outcome once attempts are used up."""
    if walk.retries.get(node.id):
        # The retry counter only describes the visit in progress: a later visit
        # (a loop back here) starts with fresh attempts.
        walk.retries[node.id] = 0
        if outcome.status.is_success:
            walk.context.set(f"internal.retry_count.{node.id}", 0)
    if outcome.status != StageStatus.RETRY:
        return outcome
    if node.get("allow_partial"):
        return _replace(outcome, StageStatus.PARTIAL_SUCCESS, "retries exhausted, partial accepted")
    reason = outcome.failure_reason or "max retries exceeded"
    return _replace(outcome, StageStatus.FAIL, outcome.notes, reason)


def _replace(outcome: Outcome, status: StageStatus, notes: str, reason: str = "") -> Outcome:
    return Outcome(
        status,
        preferred_label=outcome.preferred_label,
        suggested_next_ids=outcome.suggested_next_ids,
        context_updates=outcome.context_updates,
        notes=notes,
        failure_reason=reason,
        details=outcome.details,
        jump_to=outcome.jump_to,
    )


def _reason(outcome: Outcome) -> str:
    return outcome.failure_reason or outcome.notes or outcome.status.value


def _finish(
    run: Run,
    node: Node,
    index: int,
    outcome: Outcome,
    attempts: int,
    duration: float,
    visit: int,
    usage: Usage | None,
    commit: str | None = None,
) -> None:
    """status.json, the final stage event and the summary row."""
    _write_status(run, node, outcome)
    if outcome.status == StageStatus.FAIL:
        run.emit(StageFailed(name=node.id, index=index, error=_reason(outcome), will_retry=False))
    else:
        run.emit(
            StageCompleted(
                name=node.id,
                index=index,
                duration=duration,
                status=outcome.status.value,
                notes=outcome.notes,
                preferred_label=outcome.preferred_label,
            )
        )
    run.add_result(
        NodeResult(
            node=node.id,
            status=outcome.status.value,
            attempts=attempts,
            duration=duration,
            note=outcome.failure_reason or outcome.notes,
            usage=usage.to_json() if usage is not None else None,
            visit=visit,
            commit=commit,
            files=len(outcome.details.get("files_changed", ())) if commit else None,
        )
    )


def _write_status(run: Run, node: Node, outcome: Outcome) -> None:
    # The node's own status.json stays as it wrote it; the engine's record goes beside it.
    by_node = outcome.details.get("status_file") == status_file.BY_NODE
    run.run_dir.write_status(node.id, json_lines(outcome.to_json()), beside_node_s=by_node)
