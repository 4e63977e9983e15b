"""A run stopped between two nodes (the first one done, its files checkpointed) goes on
at the second: the first never runs again on top of what it already did."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from attractor.events import Event
from attractor.run_status import RunStatus
from tests.engine.enginekit import checkpoint_json, graph_of, resume, run

pytestmark = pytest.mark.anyio


async def test_a_run_stopped_right_after_a_node_goes_on_at_the_next_one(tmp_path: Path) -> None:
    side = tmp_path / "side.txt"
    graph = graph_of(
        f'a [shape=parallelogram, max_visits=1, tool_command="echo a >> {side}"]\n'
        f'b [shape=parallelogram, tool_command="echo b >> {side}"]\n'
        "start -> a -> b -> done\n"
    )
    a_done = anyio.Event()

    def watch(event: Event) -> None:
        if event.type == "stage_completed" and event.to_json().get("name") == "a":
            a_done.set()  # the stop comes before the walk reaches b

    async def stop_after_a() -> RunStatus:
        await a_done.wait()
        return RunStatus.TERMINATED

    stopped = await run(graph, tmp_path, observers=[watch], stop_requests=stop_after_a)

    assert stopped.status == "terminated"
    assert side.read_text().split() == ["a"]
    saved = checkpoint_json(stopped.run_dir)
    assert saved["next_node"] == "b" and saved["node_visits"]["a"] == 1
    resumed = await resume(stopped.run_dir, tmp_path)
    assert resumed.status == "success"
    assert side.read_text().split() == ["a", "b"]
