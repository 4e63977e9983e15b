"""AgentBackend: budget resolution, honest outcomes, and building the backend."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.agent.run_budget import RunLimits, RunTurnBudget
from attractor.dot.graph import Graph, Node
from attractor.errors import MissingCredentialsError, ProviderError, UsageError
from attractor.events import TurnBudgetResolved, TurnLimitReached
from attractor.handlers.agent_backend import AgentBackend, FactoryModels, SharedModel, build_backend
from attractor.handlers.backend import StageRequest
from attractor.handlers.context import Context
from attractor.handlers.outcome import StageStatus
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from attractor.llm.types import ModelRequest, ModelResponse, Usage
from attractor.settings import Settings
from tests.agent._helpers import Recorder, looping_model
from tests.handlers._graphs import POS, graph_with_node
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.wire import openai_completion


def _request(
    tmp_path: Path,
    node: Node,
    graph: Graph,
    *,
    settings: Settings | None = None,
    run_budget: RunTurnBudget | None = None,
) -> tuple[StageRequest, Recorder]:
    events = Recorder()
    workdir = tmp_path / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    request = StageRequest(
        node=node,
        prompt=node.prompt,
        context=Context(),
        graph=graph,
        stage_dir=tmp_path / "stage",
        workdir=workdir,
        attempt=1,
        visit=1,
        settings=settings or Settings(),
        emit=events,
        run_budget=run_budget or RunTurnBudget(),
    )
    return request, events


@pytest.mark.anyio
async def test_success_reports_turns_usage_and_the_response(tmp_path: Path) -> None:
    graph, node = graph_with_node({"prompt": "say hi", "max_turns": "4"})
    model = ScriptedModel([ScriptedResponse("hello there")])
    request, events = _request(tmp_path, node, graph)
    outcome = await AgentBackend(SharedModel(model)).run(request)
    assert outcome.status == StageStatus.SUCCESS
    assert (request.stage_dir / "response.md").read_text(encoding="utf-8") == "hello there"
    assert outcome.details["turns_used"] == 1 and outcome.details["turn_limit_reached"] is False
    assert outcome.details["usage"] == Usage().to_json()
    assert outcome.details["turn_budget"]["effective"] == 4
    assert outcome.context_updates == {
        "agent.turns_used": 1,
        "agent.turn_limit_reached": False,
        "last_stage": "work",
        "last_response": "hello there",
    }
    assert (tmp_path / "stage" / "response.md").read_text() == "hello there"
    (resolved,) = events.of(TurnBudgetResolved)
    assert resolved.budget == outcome.details["turn_budget"]
    assert model.requests[0].messages[1].content == "say hi"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("policy", "status"),
    [
        ("fail", StageStatus.FAIL),
        ("partial_success", StageStatus.PARTIAL_SUCCESS),
        ("retry", StageStatus.RETRY),
    ],
)
async def test_the_turn_limit_sets_the_status_from_on_turn_limit(
    tmp_path: Path, policy: str, status: StageStatus
) -> None:
    graph, node = graph_with_node({"max_turns": "2", "on_turn_limit": policy})
    request, events = _request(tmp_path, node, graph)
    outcome = await AgentBackend(SharedModel(looping_model())).run(request)
    reason = "turn limit reached: 2 of 2 turns (node max_turns)"
    assert outcome.status == status
    assert outcome.notes == reason
    assert outcome.failure_reason == ("" if policy == "partial_success" else reason)
    assert outcome.context_updates["agent.turn_limit_reached"] is True
    (limit,) = events.of(TurnLimitReached)
    assert (limit.node, limit.turns_used, limit.limit, limit.reason) == ("work", 2, 2, reason)


@pytest.mark.anyio
async def test_an_exhausted_run_budget_fails_the_node_naming_the_budget(tmp_path: Path) -> None:
    graph, node = graph_with_node({"max_turns": "5"})
    settings = Settings(max_total_turns=2, sources={"max_total_turns": "--max-total-turns"})
    budget = RunTurnBudget(RunLimits(turns=2))
    request, events = _request(tmp_path, node, graph, settings=settings, run_budget=budget)
    outcome = await AgentBackend(SharedModel(looping_model())).run(request)
    assert outcome.status == StageStatus.FAIL
    assert outcome.failure_reason == (
        "run turn budget exhausted: 2 of 2 model requests (--max-total-turns)"
    )
    assert budget.exhausted and outcome.details["turns_used"] == 2
    assert events.of(TurnLimitReached) == []


class _BrokenModel:
    """A model whose provider always refuses (a fake of a real failure mode)."""

    provider = "openai"
    name = "broken"

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise ProviderError("authentication failed", provider="openai", model="broken", status=401)

    async def aclose(self) -> None:
        return None


@pytest.mark.anyio
async def test_a_model_error_is_a_failed_outcome_not_a_crash(tmp_path: Path) -> None:
    graph, node = graph_with_node({"max_turns": "5"})
    request, _ = _request(tmp_path, node, graph)
    outcome = await AgentBackend(SharedModel(_BrokenModel())).run(request)
    assert outcome.status == StageStatus.FAIL
    assert "authentication failed" in outcome.failure_reason
    assert outcome.details["turns_used"] == 1


class _CrashingModel:
    """A model whose adapter has a bug: it raises something that is not an LLMError."""

    provider = "openai"
    name = "crashing"

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise AttributeError("'str' object has no attribute 'choices'")

    async def aclose(self) -> None:
        return None


@pytest.mark.anyio
async def test_any_exception_is_a_failed_outcome_with_the_budget_details(tmp_path: Path) -> None:
    graph, node = graph_with_node({"max_turns": "5"})
    request, _ = _request(tmp_path, node, graph)
    outcome = await AgentBackend(SharedModel(_CrashingModel())).run(request)
    assert outcome.status == StageStatus.FAIL
    assert outcome.failure_reason == (
        "the agent failed unexpectedly: AttributeError: 'str' object has no attribute 'choices'"
    )
    assert outcome.details["turn_budget"]["effective"] == 5
    assert outcome.details["turns_used"] == 1
    assert outcome.details["turn_limit_reached"] is False
    assert outcome.details["usage"] == Usage().to_json()
    assert outcome.context_updates["agent.turns_used"] == 1
    assert outcome.context_updates["agent.turn_limit_reached"] is False


class _HangingModel:
    """A model whose request never ends until cancelled."""

    provider = "openai"
    name = "hanging"

    def __init__(self) -> None:
        self.asked = anyio.Event()

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        return None


@pytest.mark.anyio
async def test_cancellation_is_never_turned_into_an_outcome(tmp_path: Path) -> None:
    graph, node = graph_with_node({"max_turns": "5"})
    request, _ = _request(tmp_path, node, graph)
    model = _HangingModel()
    outcomes: list[object] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def run() -> None:
                outcomes.append(await AgentBackend(SharedModel(model)).run(request))

            group.start_soon(run)
            await model.asked.wait()
            scope.cancel()
    assert scope.cancelled_caught and outcomes == []


# -- build_backend ------------------------------------------------------------------


def _script(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data))
    return f"scripted:{path}"


@pytest.mark.anyio
async def test_scripted_backend_shares_one_model_across_nodes(tmp_path: Path) -> None:
    spec = _script(tmp_path, {"responses": [{"text": "one"}, {"text": "two"}]})
    graph, first = graph_with_node()
    second = graph.add_node("other", {"shape": "box"}, POS)
    backend = build_backend(Settings(backend=spec), graph)
    texts = []
    for node in (first, second):
        request, _ = _request(tmp_path / node.id, node, graph)
        outcome = await backend.run(request)
        assert not isinstance(outcome, str)
        texts.append((request.stage_dir / "response.md").read_text(encoding="utf-8"))
    assert texts == ["one", "two"]
    await backend.aclose()


def test_a_bad_script_is_a_usage_error(tmp_path: Path) -> None:
    graph, _ = graph_with_node()
    with pytest.raises(UsageError, match="model.json"):
        build_backend(Settings(backend=_script(tmp_path, {"responses": 3})), graph)


def test_llm_backend_checks_every_codergen_node_before_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    graph, _ = graph_with_node({"llm_model": "gpt-4o-mini"})
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        build_backend(Settings(backend="llm"), graph)


@pytest.mark.anyio
async def test_llm_models_are_built_once_per_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    graph, first = graph_with_node({"llm_model": "gpt-4o-mini"})
    second = graph.add_node("other", {"shape": "box", "llm_model": "gpt-4o-mini"}, POS)
    third = graph.add_node("third", {"shape": "box", "llm_model": "gpt-4o"}, POS)
    models = FactoryModels(Settings(backend="llm"))
    models.check(graph)
    assert models.model_for(first) is models.model_for(second)
    assert models.model_for(third) is not models.model_for(first)
    assert models.model_for(third).name == "gpt-4o"
    await models.aclose()


def test_simulate_is_not_an_agent_backend() -> None:
    graph, _ = graph_with_node()
    with pytest.raises(ValueError, match="simulate"):
        build_backend(Settings(backend="simulate"), graph)


@pytest.mark.anyio
async def test_the_node_tool_profile_and_project_context_reach_the_model(tmp_path: Path) -> None:
    graph, node = graph_with_node({"prompt": "fix it", "tool_profile": "openai"})
    model = ScriptedModel([ScriptedResponse("done")])
    request, _ = _request(tmp_path, node, graph)
    (request.workdir / "AGENTS.md").write_text("Always run make check.\n")
    (request.workdir / ".codex").mkdir()
    (request.workdir / ".codex" / "instructions.md").write_text("Codex house style.\n")
    (request.workdir / "CLAUDE.md").write_text("Not for this profile.\n")
    await AgentBackend(SharedModel(model)).run(request)
    [sent] = model.requests
    assert {"apply_patch", "spawn_agent"} <= {t.name for t in sent.tools}
    assert "edit_file" not in {t.name for t in sent.tools}
    system = sent.messages[0].content
    assert "apply_patch" in system and "<environment>" in system
    assert "Always run make check." in system and "Codex house style." in system
    assert "Not for this profile." not in system
    [line] = [
        json.loads(x) for x in (request.stage_dir / "transcript.jsonl").read_text().splitlines()
    ]
    files = [Path(f["path"]).name for f in line["project_context"]["instruction_files"]]
    assert files == ["AGENTS.md", "instructions.md"]


@pytest.mark.anyio
async def test_the_scripted_model_gets_the_default_tool_set(tmp_path: Path) -> None:
    graph, node = graph_with_node({"prompt": "fix it"})
    model = ScriptedModel([ScriptedResponse("done")])
    request, _ = _request(tmp_path, node, graph)
    await AgentBackend(SharedModel(model)).run(request)
    names = {t.name for t in model.requests[0].tools}
    assert "edit_file" in names and not names & {"apply_patch", "spawn_agent"}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("attrs", "editing"),
    [
        ({}, "apply_patch"),  # gpt-5 behind a gateway: the tools it was trained on
        ({"tool_profile": "default"}, "edit_file"),  # the node still chooses
    ],
)
async def test_an_openai_model_behind_a_gateway_keeps_its_tool_profile(
    tmp_path: Path, attrs: dict[str, str], editing: str
) -> None:
    graph, node = graph_with_node({"prompt": "fix it", **attrs})
    settings = Settings(backend="llm", provider="openai", model="gpt-5")
    with FakeServer([Reply(body=openai_completion("done"))]).running() as gateway:
        settings = replace(settings, base_url=f"{gateway.url}/v1")
        request, _ = _request(tmp_path, node, graph, settings=settings)
        backend = AgentBackend(FactoryModels(settings))
        try:
            outcome = await backend.run(request)
        finally:
            await backend.aclose()
    assert outcome.status == StageStatus.SUCCESS, outcome.failure_reason
    [sent] = gateway.bodies
    names = {tool["function"]["name"] for tool in sent["tools"]}
    assert editing in names
    assert not names & {"apply_patch", "edit_file"} - {editing}


def test_an_openai_compatible_server_is_told_apart_from_openai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    graph, node = graph_with_node({"llm_model": "gpt-4o"})
    local = FactoryModels(Settings(backend="llm", base_url="http://127.0.0.1:8080/v1"))
    hosted = FactoryModels(Settings(backend="llm", base_url="https://api.openai.com/v1"))
    plain = FactoryModels(Settings(backend="llm"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert local.compatible_server(node)
    assert not hosted.compatible_server(node) and not plain.compatible_server(node)
