"""Stages that share a conversation: full fidelity through the real engine and agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attractor.handlers.agent_backend import AgentBackend, SharedModel
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from attractor.llm.types import ModelRequest
from tests.engine.enginekit import graph_of, run, status_json

pytestmark = pytest.mark.anyio


def _model(*texts: str) -> ScriptedModel:
    return ScriptedModel([ScriptedResponse(text=t) for t in texts])


def _texts(request: ModelRequest) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in request.messages if m.role != "system"]


async def test_full_fidelity_continues_the_plan_conversation(tmp_path: Path) -> None:
    graph = graph_of(
        'plan [prompt="Plan the work", thread_id="main"]\n'
        'implement [prompt="Implement the plan", thread_id="main"]\n'
        "start -> plan -> implement -> done",
        attrs='default_fidelity="full"',
    )
    model = _model("PLAN: two steps", "IMPLEMENTED")
    result = await run(graph, tmp_path, backend=AgentBackend(SharedModel(model)))
    assert result.status == "success"
    implement = model.requests[1]
    assert _texts(implement) == [
        ("user", "Plan the work"),
        ("assistant", "PLAN: two steps"),
        ("user", "Implement the plan"),
    ]
    carried = status_json(result, "implement")["context_carried"]
    assert carried["fidelity"] == "full" and carried["thread"] == "main"
    assert carried["history_messages"] == 2
    saved = json.loads((result.run_dir / carried["thread_file"]).read_text())
    assert [m["content"] for m in saved][-1] == "IMPLEMENTED"


async def test_summary_low_gives_a_bounded_summary_and_no_conversation(tmp_path: Path) -> None:
    graph = graph_of(
        'plan [prompt="Plan the work"]\n'
        'implement [prompt="Implement the plan", fidelity="summary:low"]\n'
        "start -> plan -> implement -> done",
        attrs='goal="ship the feature"',
    )
    model = _model("PLAN: " + "x" * 5000, "IMPLEMENTED")
    result = await run(graph, tmp_path, backend=AgentBackend(SharedModel(model)))
    assert result.status == "success"
    messages = _texts(model.requests[1])
    assert len(messages) == 1  # a fresh conversation: only its own prompt
    prompt = messages[0][1]
    assert prompt.endswith("Implement the plan") and "Goal: ship the feature" in prompt
    assert "plan: success" in prompt and "PLAN: xxx" in prompt
    assert len(prompt) <= 2400 + len("\n\n---\n\nImplement the plan")


async def test_parallel_branches_fork_the_thread_and_keep_their_own(tmp_path: Path) -> None:
    graph = graph_of(
        'plan [prompt="Plan"]\n fan [shape=component]\n join [shape=tripleoctagon]\n'
        'left [prompt="Left"]\n right [prompt="Right"]\n after [prompt="After"]\n'
        "start -> plan -> fan\n fan -> left -> join\n fan -> right -> join\n"
        "join -> after -> done",
        attrs='default_fidelity="full"; thread_id="main"',
    )
    model = _model("PLANNED", "BRANCH ANSWER", "BRANCH ANSWER", "AFTER")
    result = await run(graph, tmp_path, backend=AgentBackend(SharedModel(model)))
    assert result.status == "success"
    by_prompt = {_texts(r)[-1][1]: _texts(r) for r in model.requests}
    for branch in ("Left", "Right"):  # each continues plan, neither sees the other
        assert by_prompt[branch] == [
            ("user", "Plan"),
            ("assistant", "PLANNED"),
            ("user", branch),
        ]
    # After the fan-in the main thread goes on from where it forked.
    assert by_prompt["After"] == [("user", "Plan"), ("assistant", "PLANNED"), ("user", "After")]
    assert (result.run_dir / "threads" / "main@left").is_dir()
    assert (result.run_dir / "threads" / "main@right").is_dir()
