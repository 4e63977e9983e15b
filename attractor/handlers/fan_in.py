"""The fan-in handler: choose the best result of a parallel node's branches.

Without a ``prompt`` (or with the simulate backend) the choice is a heuristic:
the best status (success, partial_success, retry, skipped, fail), then the
branch id. With a ``prompt`` the run's model ranks the branches: it gets the
prompt, every branch's status, notes and the start of its last response, may
use its tools to look at what the branches changed, and ends its answer with a
JSON object ``{"best_id": ..., "ranking": [...], "reason": ...}`` (or reports
``context_updates`` with those keys). An answer that names no branch falls back
to the heuristic, with a warning; a model that fails fails the node.
"""

from __future__ import annotations

from typing import Any

from attractor.agent.report import trailing_object
from attractor.dot.graph import Graph, Node
from attractor.errors import AttractorError, InputFileError
from attractor.events import AgentWarning
from attractor.fileio.reads import TEXT_LIMIT, read_head
from attractor.fileio.writes import write_text
from attractor.handlers.base import StageEnv
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.simulate import SimulateBackend

_RANK = {"success": 0, "partial_success": 1, "retry": 2, "skipped": 3, "fail": 4}
_RESPONSE_CHARS = 2000

Candidate = dict[str, Any]


class FanInHandler:
    """Picks the best branch result, by the model when the node has a prompt."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        results = context.get("parallel.results")
        listed = results if isinstance(results, list) else []
        candidates = [r for r in listed if isinstance(r, dict)]
        if not candidates:
            return Outcome.fail(f"fan-in {node.id}: no parallel results to choose from")
        ranking = by_heuristic(candidates)
        reason, ranked_by = "", "heuristic"
        if node.prompt and not isinstance(env.services.backend, SimulateBackend):
            try:
                choice = await _ask_model(node, graph, context, env, candidates)
            except AttractorError as error:
                return Outcome.fail(f"fan-in {node.id}: the model could not rank: {error}")
            if choice is not None:
                ranking, reason, ranked_by = choice[0], choice[1], "model"
        return _outcome(node, ranking, reason, ranked_by)


def by_heuristic(candidates: list[Candidate]) -> list[Candidate]:
    """Best status first, then branch id."""
    return sorted(candidates, key=lambda r: (_RANK.get(str(r.get("status")), 9), str(r.get("id"))))


def _outcome(node: Node, ranking: list[Candidate], reason: str, ranked_by: str) -> Outcome:
    best = ranking[0]
    updates = {
        "parallel.fan_in.best_id": best.get("id"),
        "parallel.fan_in.best_outcome": best.get("status"),
        "parallel.fan_in.ranking": [r.get("id") for r in ranking],
        "parallel.fan_in.ranked_by": ranked_by,
        "parallel.fan_in.reason": reason,
    }
    if str(best.get("status")) == "fail":
        return Outcome(
            StageStatus.FAIL, failure_reason="every parallel branch failed", context_updates=updates
        )
    notes = f"Selected best candidate: {best.get('id')}"
    if ranked_by == "model":
        notes += f", ranked by the model: {reason}" if reason else ", ranked by the model"
    return Outcome(
        StageStatus.SUCCESS,
        notes=notes,
        context_updates=updates,
    )


async def _ask_model(
    node: Node, graph: Graph, context: Context, env: StageEnv, candidates: list[Candidate]
) -> tuple[list[Candidate], str] | None:
    """The model's ranking and reason, or None when its answer names no branch."""
    prompt = ranking_prompt(node.prompt.replace("$goal", graph.goal), candidates)
    write_text(env.stage_dir / "prompt.md", prompt)
    request = env.request(node, prompt, context, graph)
    result = await env.services.backend.run(request)
    if isinstance(result, Outcome) and result.status.is_failure:
        raise AttractorError(result.failure_reason or result.status.value)
    answer = _answer(result, env)
    choice = _parse_choice(answer, candidates)
    if choice is None:
        env.emit(
            AgentWarning(
                node=node.id,
                turn=0,
                message="the model's answer named no branch as best_id; chose by heuristic",
            )
        )
    return choice


def ranking_prompt(prompt: str, candidates: list[Candidate]) -> str:
    """The node's prompt, each branch's result, and the answer format."""
    parts = [prompt.strip(), "", "## The branches"]
    for c in candidates:
        parts += ["", f"### {c.get('id')} (status: {c.get('status')})"]
        for key in ("notes", "failure_reason"):
            if c.get(key):
                parts.append(f"{key}: {c[key]}")
        response = str(c.get("last_response") or "")[:_RESPONSE_CHARS]
        if response:
            parts += ["last response:", response]
    ids = ", ".join(str(c.get("id")) for c in candidates)
    parts += [
        "",
        f"Rank the branches ({ids}), best first. End your answer with a JSON object: "
        '{"best_id": "<branch id>", "ranking": ["<branch id>", ...], "reason": "<one sentence>"}',
    ]
    return "\n".join(parts)


def _answer(result: str | Outcome, env: StageEnv) -> tuple[str, dict[str, Any]]:
    if isinstance(result, str):
        return result, {}
    path = env.stage_dir / "response.md"
    try:
        text = read_head(path, TEXT_LIMIT, "response file", follow=False).decode(
            "utf-8", errors="replace"
        )
    except InputFileError:
        text = ""
    return text, result.context_updates


def _parse_choice(
    answer: tuple[str, dict[str, Any]], candidates: list[Candidate]
) -> tuple[list[Candidate], str] | None:
    text, reported = answer
    by_id = {str(c.get("id")): c for c in candidates}
    found = reported if "best_id" in reported else trailing_object(text, lambda o: "best_id" in o)
    if not found or str(found.get("best_id")) not in by_id:
        return None
    best = str(found["best_id"])
    named = found.get("ranking")
    order = [best]
    if isinstance(named, list):
        order += [str(i) for i in named if str(i) in by_id]
    rest = [c for c in by_heuristic(candidates) if str(c.get("id")) not in order]
    ranking = [by_id[i] for i in dict.fromkeys(order)] + rest
    return ranking, str(found.get("reason") or "")
