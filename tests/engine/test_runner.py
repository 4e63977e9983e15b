"""The runner API: results, run directory files, event stream, loop_restart."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from attractor.engine.eventbus import EventBus
from attractor.engine.run import RunResult
from attractor.events import Event
from attractor.handlers.backend import StageRequest
from attractor.llm.types import Usage
from tests.engine.enginekit import checkpoint_json, graph_of, run

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("status", "code"),
    [("success", 0), ("fail", 1), ("timed_out", 124), ("interrupted", 130), ("terminated", 143)],
)
def test_exit_codes(status: str, code: int) -> None:
    result = RunResult(status, Path("."), "", None, [], {}, None)  # type: ignore[arg-type]
    assert result.exit_code == code


async def test_run_directory_holds_manifest_source_copy_and_event_log(tmp_path: Path) -> None:
    graph = graph_of("a\n start -> a -> done", name="demo", attrs='goal="g"')
    result = await run(graph, tmp_path)
    run_dir = result.run_dir
    assert run_dir.parent == tmp_path / "runs" and run_dir.name.endswith("-demo")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["name"] == "demo" and manifest["goal"] == "g"
    assert manifest["status"] == "success"
    assert manifest["usage"] == Usage().to_json()
    assert (run_dir / "pipeline.dot").read_text() == graph.source
    lines = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "pipeline_started" and lines[-1]["type"] == "pipeline_completed"
    assert all(isinstance(line["ts"], float) for line in lines)
    assert checkpoint_json(run_dir)["completed_nodes"] == ["start", "a", "done"]


async def test_events_reach_observers_and_the_async_stream_alike(tmp_path: Path) -> None:
    bus = EventBus()
    stream = bus.subscribe()
    seen: list[Event] = []
    streamed: list[Event] = []

    async def consume() -> None:
        async with stream:
            async for event in stream:
                streamed.append(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await run(graph_of("a\n start -> a -> done"), tmp_path, bus=bus, observers=[seen.append])
    assert [e.type for e in streamed] == [e.type for e in seen]
    assert streamed[-1].type == "pipeline_completed"


async def test_a_failing_observer_does_not_stop_the_run(tmp_path: Path) -> None:
    def broken(event: Event) -> None:
        raise RuntimeError("display bug")

    result = await run(graph_of("start -> done"), tmp_path, observers=[broken])
    assert result.status == "success"
    assert result.warnings and "display bug" in result.warnings[0]


async def test_loop_restart_continues_in_a_fresh_run_directory(tmp_path: Path) -> None:
    graph = graph_of(
        'a [shape=parallelogram, tool_command="echo x >> count; test $(wc -l < count) -ge 2"]\n'
        "start -> a\n"
        'a -> start [condition="outcome=fail", loop_restart=true]\n'
        'a -> done [condition="outcome=success"]\n'
    )
    result = await run(graph, tmp_path)
    assert result.status == "success"
    first, second = sorted((tmp_path / "runs").iterdir())
    assert result.run_dir == second and second.name == f"{first.name}-restart1"
    assert checkpoint_json(first)["status"] == "restarted"
    old_manifest = json.loads((first / "manifest.json").read_text())
    assert old_manifest["restarted_into"] == second.name
    assert checkpoint_json(second)["completed_nodes"] == ["start", "a", "done"]
    assert [r.node for r in result.node_results] == ["start", "a", "start", "a", "done"]


async def test_a_restarted_run_directory_names_a_new_one_that_can_be_resumed(
    tmp_path: Path,
) -> None:
    """By the time the first directory says the run went on elsewhere (its final event),
    the new one holds a manifest and a checkpoint at the node it starts at: a run
    killed right then is one ``attractor resume`` of the new directory goes on with."""
    graph = graph_of(
        'a [shape=parallelogram, tool_command="echo x >> count; test $(wc -l < count) -ge 2"]\n'
        "start -> a\n"
        'a -> start [condition="outcome=fail", loop_restart=true]\n'
        'a -> done [condition="outcome=success"]\n'
    )
    seen: list[dict[str, object]] = []

    def at_the_hand_over(event: Event) -> None:
        if event.type == "pipeline_completed" and not seen:
            (new,) = (tmp_path / "runs").glob("*-restart1")
            seen.append(checkpoint_json(new))
            seen.append(json.loads((new / "manifest.json").read_text()))

    result = await run(graph, tmp_path, observers=[at_the_hand_over])

    assert result.status == "success"
    opening, manifest = seen
    assert (opening["status"], opening["next_node"]) == ("running", "start")
    assert opening["node_visits"] == {"start": 1, "a": 1}  # visit limits count across
    assert manifest["status"] == "running" and manifest["restarted_from"]


async def test_a_run_directory_is_locked_while_it_runs_and_released_after(
    tmp_path: Path,
) -> None:
    from attractor.errors import UsageError
    from attractor.store.rundir import RunDir

    seen: list[str] = []

    class TriesTheLock:
        async def run(self, request: StageRequest) -> str:
            try:
                RunDir(request.stage_dir.parent).lock()
            except UsageError as exc:
                seen.append(str(exc))
            return "ok"

        async def aclose(self) -> None:
            return None

    result = await run(graph_of("a\n start -> a -> done"), tmp_path, backend=TriesTheLock())
    assert result.status == "success"
    assert seen == [
        f"{result.run_dir} is in use by another attractor process (pid {os.getpid()}); "
        "wait for it or stop it"
    ]
    after = RunDir(result.run_dir)
    after.lock()  # released once the run finished
    after.unlock()
