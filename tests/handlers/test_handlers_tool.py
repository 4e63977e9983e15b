"""The tool handler: real shell commands, files in the stage directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attractor.events import Event
from tests.engine.enginekit import graph_of, run, status_json

pytestmark = pytest.mark.anyio


async def test_tool_output_goes_to_files_and_the_context(tmp_path: Path) -> None:
    graph = graph_of(
        't [shape=parallelogram, tool_command="echo out; echo err >&2"]\n start -> t -> done'
    )
    result = await run(graph, tmp_path)
    assert result.status == "success"
    stage = result.run_dir / "t"
    assert (stage / "stdout.txt").read_text() == "out\n"
    assert (stage / "stderr.txt").read_text() == "err\n"
    assert status_json(result, "t")["context_updates"]["tool.output"] == "out\n"


async def test_non_zero_exit_is_fail_with_the_exit_code(tmp_path: Path) -> None:
    graph = graph_of(
        't [shape=parallelogram, tool_command="echo broken >&2; exit 3"]\n start -> t -> done'
    )
    result = await run(graph, tmp_path)
    assert result.status == "fail"
    assert result.failure_reason == "t failed: tool_command exited with code 3: broken"


async def test_a_failure_quotes_the_tail_of_stdout(tmp_path: Path) -> None:
    # pytest and many other tools say why only on stdout.
    command = (
        "echo collected 4 items; echo; echo FAILED test_x.py::test_y - assert 1 == 2; "
        "echo '=== 1 failed, 3 passed in 0.1s ==='; exit 1"
    )
    graph = graph_of(f't [shape=parallelogram, tool_command="{command}"]\n start -> t -> done')
    result = await run(graph, tmp_path)
    assert result.failure_reason == (
        "t failed: tool_command exited with code 1; stdout ends: collected 4 items | "
        "FAILED test_x.py::test_y - assert 1 == 2 | === 1 failed, 3 passed in 0.1s ==="
    )
    long = graph_of('t [shape=parallelogram, tool_command="echo oops >&2; seq 1 500; exit 2"]\n'
                    "start -> t -> done")  # fmt: skip
    result = await run(long, tmp_path / "long")
    assert result.failure_reason == (
        "t failed: tool_command exited with code 2: oops; stdout ends: 498 | 499 | 500"
    )


async def test_tool_runs_in_the_node_workdir_and_sees_its_stage_dir(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    graph = graph_of(
        't [shape=parallelogram, workdir=sub, tool_command="pwd; echo $ATTRACTOR_NODE"]\n'
        "start -> t -> done"
    )
    result = await run(graph, tmp_path)
    out = status_json(result, "t")["context_updates"]["tool.output"].splitlines()
    assert out == [str((tmp_path / "sub").resolve()), "t"]


async def test_missing_command_fails_clearly(tmp_path: Path) -> None:
    graph = graph_of("t [shape=parallelogram]\n start -> t -> done")
    result = await run(graph, tmp_path)
    assert result.failure_reason == "t failed: node t: no tool_command specified"


async def test_output_lines_are_events_while_the_command_runs(tmp_path: Path) -> None:
    # The command prints, then waits until the test saw its line as an event.
    gate = tmp_path / "go"
    command = f"echo first; echo warn >&2; while [ ! -e {gate} ]; do sleep 0.02; done; echo second"
    graph = graph_of(f't [shape=parallelogram, tool_command="{command}"]\n start -> t -> done')
    seen: list[dict[str, object]] = []

    def observe(event: Event) -> None:
        if event.type == "stage_output":
            seen.append(event.to_json())
            gate.touch()  # only once the first line was seen does the command go on

    result = await run(graph, tmp_path, observers=[observe])
    assert result.status == "success"
    out = [e for e in seen if e["stream"] == "stdout"]
    assert [e["text"] for e in out] == ["first\n", "second\n"]
    assert [e["offset"] for e in out] == [0, 6]
    assert [e["text"] for e in seen if e["stream"] == "stderr"] == ["warn\n"]
    assert {(e["node"], e["visit"], e["attempt"]) for e in seen} == {("t", 1, 1)}
    lines = (result.run_dir / "events.jsonl").read_text().splitlines()
    logged = [json.loads(line) for line in lines]
    assert [e["text"] for e in logged if e["type"] == "stage_output"] == [e["text"] for e in seen]
