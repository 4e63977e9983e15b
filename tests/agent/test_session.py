"""The agent loop against the scripted model: exact budgets, final turn, reflection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.agent.loop_detect import LoopDetector
from attractor.agent.run_budget import RunLimits, RunTurnBudget
from attractor.agent.session import AgentSession, SessionConfig, SessionResult
from attractor.agent.tools import default_registry
from attractor.agent.transcript import Transcript
from attractor.events import (
    AgentReflection,
    AgentTurnStarted,
    AgentWarning,
    ToolCallCompleted,
)
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from attractor.llm.types import Usage

from ._helpers import Recorder, looping_model, read_jsonl


async def _run(
    tmp_path: Path,
    model: ScriptedModel,
    *,
    max_turns: int,
    sprint_limit: int = 0,
    run_budget: RunTurnBudget | None = None,
    loop_window: int = 10,
) -> tuple[SessionResult, Recorder]:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    events = Recorder()
    session = AgentSession(
        model,
        SessionConfig(
            node_id="work",
            prompt="do the task",
            workdir=workdir,
            max_turns=max_turns,
            sprint_limit=sprint_limit,
        ),
        tools=default_registry(),
        transcript=Transcript(tmp_path / "stage"),
        emit=events,
        run_budget=run_budget,
        loop_detector=LoopDetector(loop_window),
    )
    return await session.run(), events


def _lines(tmp_path: Path) -> list[dict[str, Any]]:
    return read_jsonl(tmp_path / "stage" / "transcript.jsonl")


def _write(path: str) -> ScriptedResponse:
    return ScriptedResponse(f"writing {path}", (("write_file", {"path": path, "content": "x"}),))


@pytest.mark.anyio
@pytest.mark.parametrize("budget", [1, 2, 3, 7])
async def test_a_model_that_never_stops_gets_exactly_n_requests(
    tmp_path: Path, budget: int
) -> None:
    model = looping_model()
    result, _ = await _run(tmp_path, model, max_turns=budget)
    lines = _lines(tmp_path)
    assert len(model.requests) == len(lines) == result.turns_used == budget
    assert [line["turn"] for line in lines] == list(range(1, budget + 1))
    assert [line["kind"] for line in lines] == ["work"] * (budget - 1) + ["final"]
    assert lines[-1]["tools_offered"] == []
    assert model.requests[-1].tools == ()
    assert all(line["tools_offered"] for line in lines[:-1])
    assert result.turn_limit_reached and not result.run_budget_exhausted


@pytest.mark.anyio
async def test_the_final_turn_asks_for_a_summary_and_its_text_is_the_response(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [_write("a.txt"), _write("b.txt"), ScriptedResponse("done a and b; c is left")]
    )
    result, _ = await _run(tmp_path, model, max_turns=3)
    last_request = model.requests[-1]
    assert "last turn" in last_request.messages[-1].content
    assert last_request.messages[-1].role == "user"
    assert result.text == "done a and b; c is left"
    assert result.turn_limit_reached


@pytest.mark.anyio
async def test_tool_calls_on_the_final_turn_are_not_run(tmp_path: Path) -> None:
    model = ScriptedModel([_write("a.txt"), _write("b.txt"), _write("c.txt")], then="stop")
    result, events = await _run(tmp_path, model, max_turns=3)
    work = tmp_path / "work"
    assert (work / "a.txt").exists() and (work / "b.txt").exists()
    assert not (work / "c.txt").exists()
    assert len(events.of(ToolCallCompleted)) == 2
    warnings = [w.message for w in events.of(AgentWarning)]
    assert any("final turn" in w and "not run" in w for w in warnings)
    assert result.text == "writing c.txt"


@pytest.mark.anyio
async def test_a_model_that_answers_in_text_ends_the_session_early(tmp_path: Path) -> None:
    model = ScriptedModel(
        [_write("a.txt"), ScriptedResponse("all done", usage=Usage(10, 3))], then="stop"
    )
    result, _ = await _run(tmp_path, model, max_turns=10)
    assert (result.text, result.turns_used, result.turn_limit_reached) == ("all done", 2, False)
    assert [line["kind"] for line in _lines(tmp_path)] == ["work", "work"]
    assert _lines(tmp_path)[1]["usage"] == Usage(10, 3).to_json()
    assert "usage" not in _lines(tmp_path)[0]
    assert result.usage == Usage(10, 3)


@pytest.mark.anyio
async def test_sprint_limit_two_of_seven_reflects_at_three_and_six(tmp_path: Path) -> None:
    model = looping_model()
    result, events = await _run(tmp_path, model, max_turns=7, sprint_limit=2)
    lines = _lines(tmp_path)
    kinds = [line["kind"] for line in lines]
    assert kinds == ["work", "work", "reflection", "work", "work", "reflection", "final"]
    assert [line["tools_offered"] == [] for line in lines] == [
        False, False, True, False, False, True, True,
    ]  # fmt: skip
    assert [e.turn for e in events.of(AgentReflection)] == [3, 6]
    # The model asked for tools on reflection turns too: only work turns ran them.
    assert [e.turn for e in events.of(ToolCallCompleted)] == [1, 2, 4, 5]
    assert sum("reflection turn" in w.message for w in events.of(AgentWarning)) == 2
    reflections = (tmp_path / "stage" / "reflections.md").read_text()
    assert reflections.count("## Reflection at turn") == 2
    reflection_prompt = model.requests[2].messages[-1].content
    assert "2 turns are used and 5 remain" in reflection_prompt
    assert result.turns_used == 7
    started = [(e.turn, e.kind, e.max_turns) for e in events.of(AgentTurnStarted)]
    assert started[2] == (3, "reflection", 7)


@pytest.mark.anyio
async def test_after_a_reflection_the_next_request_ends_with_a_user_message(
    tmp_path: Path,
) -> None:
    model = looping_model()
    await _run(tmp_path, model, max_turns=7, sprint_limit=2)
    for index, request in enumerate(model.requests):
        roles = [m.role for m in request.messages]
        assert roles[-1] in ("user", "tool"), (index, roles)
        pairs = zip(roles, roles[1:], strict=False)
        assert ("assistant", "assistant") not in pairs, (index, roles)
    # Turns 4 and 7 follow reflections: the reflection reply, then a user turn.
    for index in (3, 6):
        before, last = model.requests[index].messages[-2:]
        assert before.role == "assistant" and before.content == "looking around"
        assert last.role == "user"
    assert "tools are available again" in model.requests[3].messages[-1].content
    assert "last turn" in model.requests[6].messages[-1].content


@pytest.mark.anyio
async def test_the_run_budget_gives_the_last_request_as_a_final_turn(tmp_path: Path) -> None:
    run_budget = RunTurnBudget(RunLimits(turns=3))
    result, _ = await _run(tmp_path, looping_model(), max_turns=10, run_budget=run_budget)
    assert [line["kind"] for line in _lines(tmp_path)] == ["work", "work", "final"]
    assert result.run_budget_exhausted and not result.turn_limit_reached
    assert run_budget.exhausted and run_budget.used == 3


@pytest.mark.anyio
async def test_a_spent_run_budget_allows_no_request(tmp_path: Path) -> None:
    run_budget = RunTurnBudget(RunLimits(turns=2), used=2)
    model = looping_model()
    result, events = await _run(tmp_path, model, max_turns=5, run_budget=run_budget)
    assert model.requests == [] and result.turns_used == 0
    assert result.run_budget_exhausted and run_budget.exhausted
    assert events.of(AgentWarning)


@pytest.mark.anyio
@pytest.mark.parametrize("limit", [3, 4, 5, 8])
async def test_parallel_sessions_share_the_run_budget_fairly(tmp_path: Path, limit: int) -> None:
    run_budget = RunTurnBudget(RunLimits(turns=limit))
    model = looping_model()  # one model for all, as the scripted backend shares its script
    results: dict[str, SessionResult] = {}

    async def agent(name: str) -> None:
        results[name], _ = await _run(tmp_path / name, model, max_turns=10, run_budget=run_budget)

    async with anyio.create_task_group() as group:
        for name in ("a", "b", "c"):
            (tmp_path / name).mkdir()
            group.start_soon(agent, name)
    assert len(model.requests) == run_budget.used == limit
    assert run_budget.active == 0
    for name in ("a", "b", "c"):
        assert results[name].run_budget_exhausted
        if results[name].turns_used == 0:
            continue  # started when the rest was kept for the others' final turns
        kinds = [line["kind"] for line in _lines(tmp_path / name)]
        assert kinds[-1] == "final", (name, kinds)


@pytest.mark.anyio
async def test_an_agent_starting_when_the_rest_is_reserved_makes_no_request(
    tmp_path: Path,
) -> None:
    run_budget = RunTurnBudget(RunLimits(turns=5), used=3)
    run_budget.register()  # two agents already running: each may need its final turn
    run_budget.register()
    model = looping_model()
    result, events = await _run(tmp_path, model, max_turns=5, run_budget=run_budget)
    assert model.requests == [] and result.turns_used == 0
    assert result.run_budget_exhausted and run_budget.used == 3
    assert run_budget.active == 2
    assert "kept for the final turns of other agents" in events.of(AgentWarning)[0].message


@pytest.mark.anyio
async def test_the_model_is_told_its_budget_and_warned_at_eighty_percent(tmp_path: Path) -> None:
    model = looping_model()
    await _run(tmp_path, model, max_turns=10, loop_window=50)
    system = model.requests[0].messages[0]
    assert system.role == "system"
    assert "at most 10 model requests" in system.content
    assert str(tmp_path / "work") in system.content
    notes = [
        i
        for i, request in enumerate(model.requests)
        if any("Budget check" in m.content for m in request.messages)
    ]
    assert notes[0] == 8  # the ninth request, after 8 of 10 turns
    assert "8 of your 10 turns are used and 2 remain" in model.requests[8].messages[-1].content


@pytest.mark.anyio
async def test_a_repeating_call_injects_a_loop_warning(tmp_path: Path) -> None:
    model = looping_model()
    _, events = await _run(tmp_path, model, max_turns=6, loop_window=4)
    warnings = [w for w in events.of(AgentWarning) if "repeated" in w.message]
    assert [w.turn for w in warnings] == [4]
    assert "change your approach" in warnings[0].message
    after = model.requests[4].messages
    assert after[-1].role == "user" and "change your approach" in after[-1].content
    assert after[-2].role == "tool"


@pytest.mark.anyio
async def test_tool_errors_go_back_to_the_model(tmp_path: Path) -> None:
    calls = (
        ("nope", {}),
        ("read_file", {"path": "../outside.txt"}),
        ("read_file", {}),
        ("read_file", {"path": "missing.txt"}),
    )
    model = ScriptedModel([ScriptedResponse("try", calls), ScriptedResponse("gave up")])
    result, events = await _run(tmp_path, model, max_turns=5)
    assert result.text == "gave up"
    results = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [m.is_error for m in results] == [True] * 4
    assert "unknown tool 'nope'" in results[0].content
    assert "outside the working directory" in results[1].content
    assert "missing required argument(s): path" in results[2].content
    assert "no such file" in results[3].content
    assert all(e.is_error for e in events.of(ToolCallCompleted))


@pytest.mark.anyio
async def test_long_output_is_truncated_for_the_model_but_kept_in_full(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    big = "".join(f"line {n} " + "x" * 200 + "\n" for n in range(2000))
    (tmp_path / "work" / "big.txt").write_text(big)
    model = ScriptedModel(
        [ScriptedResponse("", (("shell", {"command": "cat big.txt"}),)), ScriptedResponse("ok")]
    )
    _, events = await _run(tmp_path, model, max_turns=3)
    shown = [m for m in model.requests[1].messages if m.role == "tool"][0].content
    full = events.of(ToolCallCompleted)[0].output
    assert full.startswith(big)
    assert len(shown) < 31_000 < len(full)
    assert "characters removed" in shown
    assert "line 0 " in shown and "line 1999 " in shown
    assert big in (tmp_path / "stage" / "tools.log").read_text()
