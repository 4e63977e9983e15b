"""Reading run directories: the runs under a root and one run's state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import attractor
from attractor.fileio.reads import LINE_LIMIT
from attractor.linter.prepare import prepare
from attractor.runview.inventory import EventTail, main_path, progress, run_graph, run_state
from attractor.runview.listing import list_runs

PIPELINE = """digraph twice {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    step  [shape=parallelogram, tool_command="echo one; echo two"]
    side  [shape=parallelogram, tool_command="true"]
    start -> step -> done
    start -> side [condition="outcome=fail"]
    side -> step
}
"""


@pytest.mark.anyio
async def test_runs_are_listed_newest_first_with_their_node_states(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.dot").write_text(PIPELINE)
    first = await attractor.run("p.dot")
    second = await attractor.run("p.dot")
    runs = list_runs(Path("."))
    assert [r.path for r in runs] == [second.run_dir, first.run_dir]
    assert {r.status for r in runs} == {"success"}

    graph = run_graph(second.run_dir)
    assert graph is not None
    state = run_state(second.run_dir, graph)
    assert {k: v.state for k, v in state.nodes.items()} == {
        "start": "success", "step": "success", "done": "success", "side": "pending",
    }  # fmt: skip
    assert state.route == ["start", "step", "done"]
    assert state.nodes["step"].visits == 1 and state.nodes["step"].duration > 0
    assert state.progress is not None and state.progress.to_json() == {"index": 3, "total": 3}


def test_main_path_is_the_shortest_route_and_progress_the_furthest_node() -> None:
    graph = prepare(PIPELINE)[0]
    assert graph is not None
    path = main_path(graph)
    assert path == ["start", "step", "done"]
    assert progress(path, ["start", "side", "step"]).index == 2
    assert progress(path, []).index == 0


def test_a_run_whose_process_died_reads_as_stopped(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(
        """digraph hang {
        start [shape=Mdiamond]
        done  [shape=Msquare]
        wait  [shape=parallelogram, sandbox=none, tool_command="kill -9 $PPID"]
        start -> wait -> done
    }"""
    )
    code = "import attractor, anyio; anyio.run(lambda: attractor.run('p.dot'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, timeout=60)
    assert done.returncode == -9
    (run,) = list_runs(tmp_path)
    assert run.status == "stopped"
    state = run_state(run.path, run_graph(run.path))
    assert state.nodes["wait"].state == "stopped"


def test_event_tail_returns_whole_lines_once_with_stable_ids(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text('{"type": "a"}\n{"type": "b"}\n{"type": "c"')
    tail = EventTail(tmp_path)
    assert [(n, e["type"]) for n, e in tail.read()] == [(1, "a"), (2, "b")]
    with events.open("a") as handle:
        handle.write("}\nnot json\n")
    assert [(n, e["type"]) for n, e in tail.read()] == [(3, "c"), (4, "unreadable")]
    assert tail.read() == []
    assert [n for n, _ in EventTail(tmp_path, after=2).read()] == [3, 4]
    assert json.loads(events.read_text().splitlines()[2]) == {"type": "c"}


def test_event_tail_reads_in_chunks_without_cutting_a_line(tmp_path: Path) -> None:
    lines = [{"type": "t", "n": i, "pad": "x" * (i * 7 % 40)} for i in range(50)]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    tail = EventTail(tmp_path, after=3)
    tail.CHUNK = 16  # smaller than any line
    seen = []
    while batch := tail.read():
        seen += batch
    assert [n for n, _ in seen] == list(range(4, 51))
    assert [e["n"] for _, e in seen] == list(range(3, 50))


def test_event_tail_neither_waits_on_a_fifo_nor_reads_past_a_line_without_end(
    tmp_path: Path,
) -> None:
    events = tmp_path / "events.jsonl"
    os.mkfifo(events)
    assert EventTail(tmp_path).read() == []  # no writer: an open() would block for good
    events.unlink()
    with events.open("wb") as handle:  # sparse: a line of NULs far over the line limit
        handle.write(b'{"type": "a"}\n' + b"[" * 200 + b"]" * 200 + b"\n")
        handle.truncate(LINE_LIMIT * 2)
    tail = EventTail(tmp_path)
    found = [(n, e["type"]) for n, e in tail.read()]  # too deep, then over the limit
    assert found == [(1, "a"), (2, "unreadable"), (3, "unreadable")]
    assert tail.read() == []  # and nothing after it, however often it is asked


def test_a_run_whose_results_are_a_fifo_is_listed_as_damaged(tmp_path: Path) -> None:
    for name in ("good", "bad"):
        run = tmp_path / name
        run.mkdir()
        (run / "manifest.json").write_text(json.dumps({"name": name, "status": "success"}))
        (run / "results.jsonl").write_text('{"node": "start"}\n')
    (tmp_path / "bad" / "results.jsonl").unlink()
    os.mkfifo(tmp_path / "bad" / "results.jsonl")
    runs = {run.id: run for run in list_runs(tmp_path)}
    assert (runs["good"].status, runs["good"].nodes_done) == ("success", 1)
    assert runs["bad"].status == "damaged"
    assert "results.jsonl: cannot read: a FIFO (named pipe)" in runs["bad"].failure_reason
