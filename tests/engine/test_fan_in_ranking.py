"""Fan-in: the model ranks the branches when the node has a prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.handlers.agent_backend import AgentBackend, SharedModel
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from tests.engine.enginekit import Recorder, checkpoint_json, graph_of, run, status_json

pytestmark = pytest.mark.anyio

BRANCHES = (
    "fan [shape=component]\n"
    'left [shape=parallelogram, tool_command="echo left"]\n'
    'right [shape=parallelogram, tool_command="echo right"]\n'
    "start -> fan\n fan -> left -> join\n fan -> right -> join\n join -> done"
)


def _backend(*texts: str) -> tuple[AgentBackend, ScriptedModel]:
    model = ScriptedModel([ScriptedResponse(text=t) for t in texts])
    return AgentBackend(SharedModel(model)), model


async def test_the_model_ranking_overrides_the_heuristic(tmp_path: Path) -> None:
    graph = graph_of(f'join [shape=tripleoctagon, prompt="Pick the cleaner change"]\n{BRANCHES}')
    answer = (
        'Right is simpler.\n{"best_id": "right", "ranking": ["right", "left"], "reason": "simpler"}'
    )
    backend, model = _backend(answer)
    result = await run(graph, tmp_path, backend=backend)
    assert result.status == "success"
    prompt = model.requests[0].messages[-1].content
    assert prompt.startswith("Pick the cleaner change") and "### left" in prompt
    assert "### right (status: success)" in prompt
    context = checkpoint_json(result.run_dir)["context"]
    assert context["parallel.fan_in.best_id"] == "right"  # the heuristic would say left
    assert context["parallel.fan_in.ranking"] == ["right", "left"]
    assert context["parallel.fan_in.ranked_by"] == "model"
    assert status_json(result, "join")["notes"].endswith("ranked by the model: simpler")


async def test_an_answer_naming_no_branch_falls_back_with_a_warning(tmp_path: Path) -> None:
    graph = graph_of(f'join [shape=tripleoctagon, prompt="Pick one"]\n{BRANCHES}')
    backend, _ = _backend('{"best_id": "middle"}')
    recorder = Recorder()
    result = await run(graph, tmp_path, backend=backend, observers=[recorder])
    assert result.status == "success"
    context = checkpoint_json(result.run_dir)["context"]
    assert context["parallel.fan_in.best_id"] == "left"
    assert context["parallel.fan_in.ranked_by"] == "heuristic"
    warnings = [w["message"] for w in recorder.of("agent_warning")]
    assert any("named no branch" in w for w in warnings)


async def test_each_branch_result_is_addressable_by_its_id(tmp_path: Path) -> None:
    graph = graph_of(
        "join [shape=tripleoctagon]\n"
        'fan [shape=component]\n left [shape=parallelogram, tool_command="echo left"]\n'
        'right [shape=parallelogram, tool_command="exit 3"]\n'
        "start -> fan\n fan -> left -> join\n fan -> right -> join\n"
        'join -> done [condition="context.parallel.branch.right.status=fail"]\n'
        "join -> never\n never -> done"
    )
    result = await run(graph, tmp_path)
    context = checkpoint_json(result.run_dir)["context"]
    assert context["parallel.branch.left.status"] == "success"
    assert context["parallel.branch.right.status"] == "fail"
    assert "exited" in context["parallel.branch.right.failure_reason"]
    assert "never" not in [r.node for r in result.node_results]
