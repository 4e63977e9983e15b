"""Parallel fan-out through ``attractor run``: real overlap and first_success cancellation."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import invoke, kill_all, only_run_dir, pids_with, read_json, write

BRANCHES = 8


def _fan_out(join_policy: str, branches: dict[str, str], max_parallel: int = 8) -> str:
    nodes = "\n".join(
        f'    {name} [shape=parallelogram, tool_command="{command}"]'
        for name, command in branches.items()
    )
    edges = "\n".join(f"    fan -> {name}\n    {name} -> join" for name in branches)
    return f"""digraph fan {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    fan   [shape=component, max_parallel={max_parallel}, join_policy={join_policy}]
    join  [shape=tripleoctagon]
{nodes}
{edges}
    start -> fan
    join -> done
}}
"""


def _stamp(path: str) -> str:
    return f"date +%s.%N > {path}"


def test_eight_branches_of_sleep_1_really_overlap(workspace: Path) -> None:
    branches = {
        f"b{i}": f"{_stamp(f'start{i}')}; sleep 1; {_stamp(f'end{i}')}" for i in range(BRANCHES)
    }
    write(workspace / "fan.dot", _fan_out("wait_all", branches))
    result = invoke(["run", "fan.dot", "--logs-dir", "runs/{timestamp}-{graph}"])
    assert result.exit_code == 0, result.output
    starts = [float((workspace / f"start{i}").read_text()) for i in range(BRANCHES)]
    ends = [float((workspace / f"end{i}").read_text()) for i in range(BRANCHES)]
    # Every branch started before any branch finished: all eight ran at once.
    assert max(starts) < min(ends), (starts, ends)
    completed = read_json(only_run_dir(workspace / "runs") / "checkpoint.json")["completed_nodes"]
    assert {"fan", "join"} <= set(completed)


def test_max_parallel_bounds_how_many_branches_run_at_once(workspace: Path) -> None:
    branches = {f"b{i}": f"{_stamp(f'start{i}')}; sleep 0.3; {_stamp(f'end{i}')}" for i in range(4)}
    write(workspace / "fan.dot", _fan_out("wait_all", branches, max_parallel=2))
    result = invoke(["run", "fan.dot", "--logs-dir", "runs/{timestamp}-{graph}"])
    assert result.exit_code == 0, result.output
    spans = [
        (float((workspace / f"start{i}").read_text()), float((workspace / f"end{i}").read_text()))
        for i in range(4)
    ]
    for start, _ in spans:
        running = sum(1 for s, e in spans if s <= start < e)
        assert running <= 2, spans


@pytest.fixture
def slow_mark() -> Iterator[str]:
    word = f"29.{uuid.uuid4().int % 10**9:09d}"
    yield word
    kill_all(word)


def test_first_success_cancels_the_slower_branches(workspace: Path, slow_mark: str) -> None:
    branches = {
        "quick": "echo quick > quick.txt",
        "slow": f"sleep {slow_mark}; echo slow > slow.txt",
    }
    write(workspace / "fan.dot", _fan_out("first_success", branches))
    result = invoke(["run", "fan.dot", "--logs-dir", "runs/{timestamp}-{graph}"])
    assert result.exit_code == 0, result.output
    assert (workspace / "quick.txt").exists()
    # No process is left that could still write slow.txt, and it was never written.
    assert pids_with(slow_mark) == []
    assert not (workspace / "slow.txt").exists()
