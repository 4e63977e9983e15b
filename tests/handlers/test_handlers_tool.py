"""The tool handler: real shell commands, files in the stage directory."""

from __future__ import annotations

from pathlib import Path

import pytest

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
