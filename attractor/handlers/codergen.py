"""The codergen handler: build the prompt, ask the backend, keep prompt and response."""

from __future__ import annotations

from attractor.dot.graph import Graph, Node
from attractor.errors import AttractorError
from attractor.fileio import write_text
from attractor.handlers.backend import StageRequest
from attractor.handlers.base import StageEnv
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus

RESPONSE_PREVIEW = 200


def build_prompt(node: Node, graph: Graph) -> str:
    """The node's prompt (else its label) with ``$goal`` replaced by the graph goal."""
    text = node.prompt or node.label
    return text.replace("$goal", graph.goal)


class CodergenHandler:
    """Runs a node through the run's CodergenBackend (simulate, scripted or a model)."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        prompt = build_prompt(node, graph)
        write_text(env.stage_dir / "prompt.md", prompt)
        request = StageRequest(
            node=node,
            prompt=prompt,
            context=context,
            graph=graph,
            stage_dir=env.stage_dir,
            workdir=env.workdir(node, graph),
            attempt=env.attempt,
            visit=env.visit,
            settings=env.settings,
            emit=env.emit,
            run_budget=env.services.run_budget,
        )
        try:
            result = await env.services.backend.run(request)
        except (AttractorError, Exception) as exc:
            return Outcome.fail(str(exc) or type(exc).__name__)
        if isinstance(result, Outcome):
            _keep_response(env, result)
            return result
        write_text(env.stage_dir / "response.md", result)
        return Outcome(
            StageStatus.SUCCESS,
            notes=f"Stage completed: {node.id}",
            context_updates={
                "last_stage": node.id,
                "last_response": result[:RESPONSE_PREVIEW],
            },
        )


def _keep_response(env: StageEnv, outcome: Outcome) -> None:
    """Write response.md from an Outcome's last_response unless the backend wrote one."""
    text = outcome.context_updates.get("last_response")
    path = env.stage_dir / "response.md"
    if isinstance(text, str) and not path.exists():
        write_text(path, text)
