"""The whole-run --timeout: everything is cancelled, nothing survives, the run can resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.enginekit import Recorder, checkpoint_json, executed, graph_of, resume, run

pytestmark = pytest.mark.anyio


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of group ``pgid``; orphans may linger as zombies
    when PID 1 of a container does not reap them, which is not a leak."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            members.append(int(stat.parent.name))
    return members


async def test_run_timeout_kills_the_tool_process_group_and_saves_the_checkpoint(
    tmp_path: Path,
) -> None:
    graph = graph_of(
        'a [shape=parallelogram, tool_command="echo a >> log"]\n'
        'slow [shape=parallelogram, tool_command="echo $$ > pid; sleep 30 & wait"]\n'
        "start -> a -> slow -> done"
    )
    recorder = Recorder()
    result = await run(graph, tmp_path, timeout=0.5, observers=[recorder])
    assert result.status == "timed_out" and result.exit_code == 124
    assert result.current_node == "slow"
    assert result.failure_reason == "pipeline timed out after 500ms while running slow"
    pid = int((tmp_path / "pid").read_text())
    assert _group_members(pid) == []  # the shell and its background sleep are gone
    checkpoint = checkpoint_json(result.run_dir)
    assert checkpoint["status"] == "timed_out"
    assert checkpoint["next_node"] == "slow"
    assert checkpoint["completed_nodes"] == ["start", "a"]
    assert recorder.of("pipeline_timed_out")[0]["node"] == "slow"


async def test_resume_continues_without_rerunning_completed_nodes(tmp_path: Path) -> None:
    graph = graph_of(
        'a [shape=parallelogram, tool_command="echo a >> log"]\n'
        'b [shape=parallelogram, tool_command="test -f go || sleep 30; echo b >> log"]\n'
        'c [shape=parallelogram, tool_command="echo c >> log"]\n'
        "start -> a -> b -> c -> done"
    )
    first = await run(graph, tmp_path, timeout=0.5)
    assert first.status == "timed_out"
    (tmp_path / "go").write_text("")
    recorder = Recorder()
    second = await resume(first.run_dir, tmp_path, observers=[recorder])
    assert second.status == "success"
    assert second.run_dir == first.run_dir
    assert (tmp_path / "log").read_text() == "a\nb\nc\n"
    assert [e["name"] for e in recorder.of("stage_started")] == ["b", "c", "done"]
    assert recorder.of("pipeline_started")[0]["resumed"] is True
    assert executed(second) == ["start", "a", "b", "c", "done"]
    assert checkpoint_json(second.run_dir)["status"] == "success"


async def test_resume_restores_context_and_visit_counts(tmp_path: Path) -> None:
    graph = graph_of(
        'a [shape=parallelogram, tool_command="echo hello"]\n'
        'b [shape=parallelogram, tool_command="test -f go || sleep 30"]\n'
        "start -> a -> b -> done"
    )
    first = await run(graph, tmp_path, timeout=0.5, context_seed={"ticket": "T-9"})
    (tmp_path / "go").write_text("")
    cp = checkpoint_json(first.run_dir)
    assert cp["context"]["tool.output"] == "hello\n"
    assert cp["context"]["ticket"] == "T-9"
    assert cp["node_visits"] == {"start": 1, "a": 1}
    second = await resume(first.run_dir, tmp_path)
    assert second.status == "success"
    assert checkpoint_json(second.run_dir)["node_visits"] == {"start": 1, "a": 1, "b": 1, "done": 1}


async def test_resume_of_a_finished_run_is_a_clear_error(tmp_path: Path) -> None:
    from attractor.errors import UsageError

    result = await run(graph_of("start -> done"), tmp_path)
    with pytest.raises(UsageError, match=r"already finished \(it succeeded\)"):
        await resume(result.run_dir, tmp_path)


async def test_resume_warns_when_the_original_pipeline_changed(tmp_path: Path) -> None:
    source = tmp_path / "t.dot"
    text = (
        "digraph t { start [shape=Mdiamond]; done [shape=Msquare]\n"
        ' b [shape=parallelogram, tool_command="test -f go || sleep 30"]\n'
        " start -> b -> done }\n"
    )
    source.write_text(text)
    from attractor.engine.run import prepare_run_graph

    first = await run(prepare_run_graph(source), tmp_path, timeout=0.3)
    source.write_text(text + "// edited\n")
    (tmp_path / "go").write_text("")
    second = await resume(first.run_dir, tmp_path)
    assert second.status == "success"
    assert len(second.warnings) == 1 and "changed since this run started" in second.warnings[0]


async def test_missing_checkpoint_is_a_checkpoint_error(tmp_path: Path) -> None:
    from attractor.errors import CheckpointError

    with pytest.raises(CheckpointError, match="no checkpoint found"):
        await resume(tmp_path, tmp_path)
