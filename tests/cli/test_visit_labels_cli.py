"""``attractor status`` and ``attractor graph --run`` label visits as the run recorded them.

A slow tool node stopped by ``--timeout`` twice (in the run and in its first
resume) runs again from its start each time as the same visit and attempt:
events.jsonl says visit 1 three times, and the status timeline and the graph
must say so too, each row pointing at the folder that holds its files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import (
    events,
    finish,
    invoke,
    only_run_dir,
    sleep_mark,
    spawn,
    write,
)


@pytest.fixture
def mark() -> Iterator[str]:
    with sleep_mark(61) as word:
        yield word


def _slow(mark: str) -> str:
    # b sleeps on its first two starts and finishes on the third.
    command = (
        "n=$(cat starts 2>/dev/null || echo 0); n=$((n+1)); echo $n > starts; "
        f"[ $n -ge 3 ] && exit 0; sleep {mark}"
    )
    return f"""\
digraph slow {{
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    a     [shape=parallelogram, tool_command="echo a"]
    b     [shape=parallelogram, tool_command="{command}"]
    start -> a -> b -> exit
}}
"""


def _starts(workspace: Path) -> int:
    path = workspace / "starts"
    return int(path.read_text()) if path.exists() else 0


@pytest.mark.slow
def test_status_and_graph_read_the_visits_the_events_recorded(workspace: Path, mark: str) -> None:
    write(workspace / "slow.dot", _slow(mark))
    code, _, err = finish(
        spawn(["run", "slow.dot", "--logs-dir", "runs/slow", "--timeout", "4s"], workspace)
    )
    assert code == 124, err
    run_dir = only_run_dir(workspace / "runs")
    code, _, err = finish(spawn(["resume", str(run_dir), "--timeout", "4s"], workspace))
    assert code == 124, err
    assert _starts(workspace) == 2  # both stops caught b sleeping
    code, out, err = finish(spawn(["resume", str(run_dir), "--timeout", "60s"], workspace))
    assert code == 0, out + err
    started = [
        (e["visit"], e["attempt"])
        for e in events(run_dir)
        if e.get("name") == "b" and e["type"] == "stage_started"
    ]
    assert started == [(1, 1), (1, 1), (1, 1)]

    result = invoke(["status", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    rows = [r for r in json.loads(result.stdout)["timeline"] if r["node"] == "b"]
    assert [(r["visit"], r["attempt"], r["status"]) for r in rows] == [
        (1, 1, "stopped"),
        (1, 1, "stopped"),
        (1, 1, "success"),
    ]
    # Each start's files: moved aside by the next start, the last one in b/ itself.
    assert [r["files"] for r in rows] == ["b/v1-a1", "b/v1-a1-2", "b"]
    for row in rows:
        assert (run_dir / row["files"] / "stdout.txt").exists()

    svg = invoke(["graph", "slow.dot", "--run", str(run_dir)])
    assert svg.exit_code == 0, svg.output
    node_b = re.search(r"<!-- b -->(.*?)<!--", svg.stdout, re.S)
    assert node_b is not None and "state&#45;success" in node_b.group(1)
    # One visit: no "x2"/"x3" beside its time.
    assert not re.search(r">x\d", node_b.group(1)), node_b.group(1)
