"""AcpBackend driven through the library's backend interface: steering as more
prompt turns, the run's cost budget, and cancellation that leaves nothing behind."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from attractor.agent.run_budget import RunLimits, RunTurnBudget
from attractor.config_file import AcpAgent
from attractor.events import AgentWarning
from attractor.handlers.acp.backend import AcpBackend
from attractor.handlers.backend import StageRequest
from attractor.handlers.context import Context
from attractor.handlers.outcome import StageStatus
from attractor.settings import Settings
from tests.agent._helpers import Recorder
from tests.handlers._graphs import graph_with_node
from tests.handlers.acp.acpkit import AGENT, seen
from tests.proc.prockit import alive


def _setup(
    tmp_path: Path, turns: str, *, run_budget: RunTurnBudget | None = None
) -> tuple[AcpBackend, StageRequest, Path]:
    script = tmp_path / "script.json"
    script.write_text(turns, encoding="utf-8")
    log = tmp_path / "agent.jsonl"
    agent = AcpAgent("scripted", sys.executable, (str(AGENT), str(script), str(log)))
    graph, node = graph_with_node({"prompt": "Build it."})
    workdir = tmp_path / "work"
    workdir.mkdir()
    request = StageRequest(
        node=node,
        prompt="Build it.",
        context=Context(),
        graph=graph,
        stage_dir=tmp_path / "stage",
        workdir=workdir,
        attempt=1,
        visit=1,
        settings=Settings(kill_grace=0.5),
        emit=Recorder(),
        run_budget=run_budget or RunTurnBudget(),
    )
    request.stage_dir.mkdir()
    return AcpBackend(agent), request, log


async def _until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (the caller bounds the wait with a cancel scope)."""
    for _ in iter(int, 1):  # forever
        if condition():
            return
        await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_steering_messages_become_more_prompt_turns(tmp_path: Path) -> None:
    backend, request, log = _setup(
        tmp_path,
        '[[{"do": "say", "text": "Built."}], [{"do": "say", "text": "Tests added."}]]',
    )
    queued = [["Also add tests."]]
    request.steering = lambda: queued.pop() if queued else []
    outcome = await backend.run(request)
    assert outcome.status == StageStatus.SUCCESS, outcome.failure_reason
    assert [e["prompt"] for e in seen(log, "prompt")] == ["Build it.", "Also add tests."]
    assert (request.stage_dir / "response.md").read_text() == "Tests added."
    assert outcome.details["turns_used"] == 2


@pytest.mark.anyio
async def test_the_agents_cost_spends_the_run_budget_and_stops_it(tmp_path: Path) -> None:
    budget = RunTurnBudget(RunLimits(cost=0.75, sources={"max_cost": "--max-cost"}))
    backend, request, log = _setup(
        tmp_path,
        '[[{"do": "cost", "usd": 0.5}, {"do": "say", "text": "more"}, {"do": "cost", "usd": 1.0},'
        ' {"do": "write", "path": "late.txt", "content": "x"}, {"do": "end"}]]',
        run_budget=budget,
    )
    outcome = await backend.run(request)
    assert outcome.status == StageStatus.FAIL
    assert "cost" in outcome.failure_reason and "--max-cost" in outcome.failure_reason
    assert budget.spent.cost == 1.0
    assert seen(log, "cancel")
    assert not (request.workdir / "late.txt").exists()


@pytest.mark.anyio
async def test_cancelling_the_node_kills_the_agent_and_reraises(tmp_path: Path) -> None:
    backend, request, log = _setup(tmp_path, '[[{"do": "hang"}]]')
    with anyio.move_on_after(60) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(backend.run, request)
            await _until(lambda: bool(seen(log, "child_pid")))
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught, "the agent never hung"
    pids = [e["pid"] for e in seen(log, "pid")] + [e["child_pid"] for e in seen(log, "child_pid")]
    # SIGKILL was sent to the whole group; a killed child may take a moment to vanish.
    with anyio.move_on_after(10):
        await _until(lambda: not [pid for pid in pids if alive(pid)])
    assert not [pid for pid in pids if alive(pid)]
    assert seen(log, "cancel"), "the agent was not sent session/cancel"


@pytest.mark.anyio
async def test_an_agent_that_reports_no_cost_under_max_cost_is_flagged(tmp_path: Path) -> None:
    budget = RunTurnBudget(RunLimits(cost=1.0))
    backend, request, _ = _setup(tmp_path, '[[{"do": "say", "text": "ok"}]]', run_budget=budget)
    outcome = await backend.run(request)
    assert outcome.status == StageStatus.SUCCESS
    assert isinstance(request.emit, Recorder)
    notes = [w.message for w in request.emit.of(AgentWarning)]
    assert notes == ["ACP agent scripted reported no cost: --max-cost cannot limit it"]
