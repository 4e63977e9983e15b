"""The codergen handler: build the prompt, ask the backend, keep prompt and response.

Before asking, the stage's context fidelity decides what it is given of the run
so far: under ``full`` the conversation of its thread, otherwise a preamble
(see :mod:`attractor.handlers.fidelity`, :mod:`attractor.handlers.preamble`).
"""

from __future__ import annotations

from dataclasses import replace

from attractor.dot.graph import Graph, Node
from attractor.errors import AttractorError
from attractor.fileio.writes import write_text
from attractor.handlers import preamble
from attractor.handlers.backend import StageRequest
from attractor.handlers.base import StageEnv
from attractor.handlers.context import GATE_COMMENT_KEY, GATE_LABEL_KEY, GATE_NODE_KEY, Context
from attractor.handlers.fidelity import ARRIVAL_KEY, ContextPlan, plan_for
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.threads import ThreadStore

RESPONSE_PREVIEW = 200


def build_prompt(node: Node, graph: Graph) -> str:
    """The node's prompt (else its label) with ``$goal`` replaced by the graph goal."""
    text = node.prompt or node.label
    return text.replace("$goal", graph.goal)


class CodergenHandler:
    """Runs a node through the run's CodergenBackend (simulate, scripted or a model)."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        plan = plan_for(node, graph, context)
        store = ThreadStore(env.logs_root, plan.thread, env.branch) if plan.thread else None
        try:
            history = store.load(context) if store else ()
        except AttractorError as error:
            return Outcome.fail(str(error))
        prompt = _with_preamble(build_prompt(node, graph), plan, node, graph, context, env)
        write_text(f"{env.stage_dir}/prompt.md", prompt)
        request = env.request(
            node, prompt, context, graph, history=history, steering=env.services.steering.take
        )
        try:
            result = await env.services.backend.run(request)
        except (AttractorError, Exception) as exc:
            return Outcome.fail(str(exc) or type(exc).__name__)
        outcome = _as_outcome(result, node, env)
        return _keep_thread(outcome, request, plan, store, env)


def _with_preamble(
    prompt: str, plan: ContextPlan, node: Node, graph: Graph, context: Context, env: StageEnv
) -> str:
    """The prompt after what the stage is given: the run so far and a reviewer's comment."""
    text = preamble.build(plan.mode, graph=graph, context=context, record=env.services.record)
    parts = [p for p in (text, _gate_comment(context)) if p]
    return "\n\n---\n\n".join([*parts, prompt])


def _gate_comment(context: Context) -> str:
    """The comment given at the human gate the run just came from, if any."""
    came = context.get(ARRIVAL_KEY)
    gate = came.get("from") if isinstance(came, dict) else None
    comment = context.get_string(GATE_COMMENT_KEY)
    if not gate or not comment or context.get_string(GATE_NODE_KEY) != gate:
        return ""
    chose = context.get_string(GATE_LABEL_KEY)
    return f"## Comment from the reviewer at {gate} (chose {chose})\n\n{comment}"


def _as_outcome(result: str | Outcome, node: Node, env: StageEnv) -> Outcome:
    if isinstance(result, Outcome):
        _keep_response(env, result)
        return result
    write_text(f"{env.stage_dir}/response.md", result)
    return Outcome(
        StageStatus.SUCCESS,
        notes=f"Stage completed: {node.id}",
        context_updates={
            "last_stage": node.id,
            "last_response": result[:RESPONSE_PREVIEW],
        },
    )


def _keep_thread(
    outcome: Outcome,
    request: StageRequest,
    plan: ContextPlan,
    store: ThreadStore | None,
    env: StageEnv,
) -> Outcome:
    """Save the conversation of a thread and say in status.json what the stage was given."""
    given = {
        **plan.to_json(),
        "history_messages": len(request.history),
        "prompt_chars": len(request.prompt),
    }
    updates = outcome.context_updates
    if store is not None and request.conversation:
        saved = store.save(
            request.conversation,
            node_id=request.node.id,
            visit=env.visit,
            attempt=env.attempt,
        )
        updates = {**updates, **saved}
        given["thread_file"] = next(iter(saved.values()))
    details = {**outcome.details, "context_carried": given}
    return replace(outcome, context_updates=updates, details=details)


def _keep_response(env: StageEnv, outcome: Outcome) -> None:
    """Write response.md from an Outcome's last_response unless the backend wrote one."""
    text = outcome.context_updates.get("last_response")
    path = env.stage_dir / "response.md"
    if isinstance(text, str) and not path.exists():
        write_text(path, text)
