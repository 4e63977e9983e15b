"""The launcher every front end starts runs with: what it opens, it closes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.engine.run import RunOptions, run_pipeline
from attractor.errors import RunError, ValidationError
from attractor.events import Event, StageStarted
from attractor.handlers.builtin import default_registry
from attractor.handlers.outcome import Outcome
from attractor.handlers.simulate import SimulateBackend
from attractor.launch import Hooks, Plan, backend_for, launch, load_graph, plan_run
from attractor.settings import Settings

SLOW = """digraph slow {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    wait  [shape=parallelogram, tool_command="sleep 30"]
    start -> wait -> done
}
"""


class Watch:
    """A front end's context held open for the run, noting when it closes."""

    def __init__(self) -> None:
        self.opened = self.closed = False
        self.events: list[Event] = []
        self.waiting = anyio.Event()

    @contextlib.contextmanager
    def __call__(self, plan: Plan) -> Iterator[Watch]:
        self.opened = True
        try:
            yield self
        finally:
            self.closed = True

    def observe(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, StageStarted) and event.name == "wait":
            self.waiting.set()


def _plan(tmp_path: Path) -> Plan:
    (tmp_path / "slow.dot").write_text(SLOW)
    flags = {"logs_dir": str(tmp_path / "runs" / "{timestamp}-{graph}"), "workdir": str(tmp_path)}
    return plan_run(tmp_path / "slow.dot", flags)


@pytest.mark.anyio
async def test_a_cancelled_launch_saves_the_run_and_closes_what_it_opened(tmp_path: Path) -> None:
    watch = Watch()
    hooks = Hooks(watch=watch, observers=[watch.observe])
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel_once_waiting() -> None:
                with anyio.fail_after(60):
                    await watch.waiting.wait()
                scope.cancel()

            group.start_soon(cancel_once_waiting)
            await launch(_plan(tmp_path), hooks)
    assert watch.opened and watch.closed
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"


@pytest.mark.anyio
async def test_a_backend_that_cannot_be_built_stops_the_launch_before_the_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "slow.dot").write_text(SLOW)
    flags = {
        "logs_dir": str(tmp_path / "runs" / "{timestamp}-{graph}"),
        "backend": f"scripted:{tmp_path / 'missing.json'}",
    }
    watch = Watch()
    with pytest.raises(Exception, match="missing.json"):
        await launch(plan_run(tmp_path / "slow.dot", flags), Hooks(watch=watch))
    assert not watch.opened
    assert not (tmp_path / "runs").exists()


def test_the_loader_refuses_a_pipeline_with_lint_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.dot").write_text("digraph bad { a -> b }")
    with pytest.raises(ValidationError):
        load_graph(tmp_path / "bad.dot")


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["openai", "simulate"])
async def test_the_engine_builds_no_model_backend_of_its_own(tmp_path: Path, backend: str) -> None:
    """Only the launcher builds backends: a run handed none is refused, even one
    that would only simulate, before its run directory is made."""
    (tmp_path / "slow.dot").write_text(SLOW)
    graph, _ = load_graph(tmp_path / "slow.dot")
    settings = Settings(logs_dir=str(tmp_path / "runs" / "{timestamp}"), backend=backend)
    with pytest.raises(RunError, match="given no model backend .*RunOptions.backend"):
        await run_pipeline(graph, tmp_path / "slow.dot", RunOptions(settings=settings))
    assert not (tmp_path / "runs").exists()


def test_the_launcher_builds_the_simulate_backend_too(tmp_path: Path) -> None:
    (tmp_path / "slow.dot").write_text(SLOW)
    graph, _ = load_graph(tmp_path / "slow.dot")
    assert isinstance(backend_for(Settings(backend="simulate"), graph), SimulateBackend)


class Stamp:
    """A node type of the library user's own: writes its node id into its stage folder."""

    async def execute(self, node: Any, context: Any, graph: Any, env: Any) -> Outcome:
        (env.stage_dir / "stamped.txt").write_text(node.id)
        return Outcome.success("stamped")


@pytest.mark.anyio
async def test_a_library_node_type_runs_through_the_launcher(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(
        'digraph p { start [shape=Mdiamond]\n done [shape=Msquare]\n s [type="stamp"]\n'
        " start -> s -> done }\n"
    )
    registry = default_registry()
    registry.register("stamp", Stamp())
    flags = {"logs_dir": str(tmp_path / "runs" / "{timestamp}"), "workdir": str(tmp_path)}
    result = await launch(plan_run(tmp_path / "p.dot", flags), Hooks(registry=registry))
    assert result.status == "success"
    assert (result.run_dir / "s" / "stamped.txt").read_text() == "s"


def test_a_run_the_engine_could_not_end_is_recorded_failed_once(tmp_path: Path) -> None:
    """A front end that caught the error a run died of records it; a run that
    recorded its own end keeps it."""
    from attractor.launch import record_failure

    for name, status in (("going", "running"), ("ended", "success")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(json.dumps({"status": status}))
        record_failure(tmp_path / name, "the run stopped on an error: boom")
    going = json.loads((tmp_path / "going" / "manifest.json").read_text())
    assert going["status"] == "fail" and going["failure_reason"].endswith("boom")
    assert json.loads((tmp_path / "ended" / "manifest.json").read_text()) == {"status": "success"}
    record_failure(tmp_path / "missing", "no folder: nothing raised")
