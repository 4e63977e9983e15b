"""Start and exit nodes named by id (``Start -> End``) or by ``type`` run as start and exit.

The spec makes a node with id ``start``/``Start`` the start and one with id
``exit``/``end`` the exit whatever its shape, and gives ``type`` precedence
over ``shape``. Before, such nodes were planned and run as LLM stages: each
sent its id to the model as a prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attractor.dot.parser import parse_dot
from tests.cli.runkit import completed_stages, invoke, only_run_dir, write
from tests.llm.fake_http import FakeServer

PIPELINES = {
    "ids": "digraph G { Start -> End }\n",
    # By id whatever the shape.
    "boxes": "digraph G { start [shape=box]; end [shape=box]; start -> end }\n",
    "types": 'digraph G { a [type="start"]; b [type="exit"]; a -> b }\n',
}
ENDS = {"ids": ("Start", "End"), "boxes": ("start", "end"), "types": ("a", "b")}


@pytest.mark.parametrize("name", list(PIPELINES))
def test_the_start_and_exit_run_without_a_model_request(workspace: Path, name: str) -> None:
    write(workspace / "p.dot", PIPELINES[name])
    first, last = ENDS[name]
    with FakeServer().running() as server:
        args = ["run", "p.dot", "--base-url", f"{server.url}/v1", "--model", "m"]
        result = invoke([*args, "--logs-dir", "runs/r"])
        assert server.received == []
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    assert completed_stages(run_dir) == [first, last]
    started = [
        json.loads(line)
        for line in (run_dir / "events.jsonl").read_text("utf-8").splitlines()
        if '"stage_started"' in line
    ]
    assert [(e["name"], e["handler"]) for e in started] == [(first, "start"), (last, "exit")]


@pytest.mark.parametrize("name", list(PIPELINES))
def test_lint_and_the_plan_show_start_and_exit(workspace: Path, name: str) -> None:
    write(workspace / "p.dot", PIPELINES[name])
    first, last = ENDS[name]
    linted = invoke(["lint", "--strict", "p.dot"])
    assert linted.exit_code == 0, linted.stdout
    assert "prompt" not in linted.stdout
    plan = invoke(["run", "p.dot", "--dry-run"]).stdout
    assert f"1. {first} [start]" in plan
    assert f". {last} [exit]" in plan


def test_a_node_that_is_start_by_shape_wins_over_one_named_start() -> None:
    graph = parse_dot(
        "digraph G { begin [shape=Mdiamond]; done [shape=Msquare]; Start [prompt=p]\n"
        "begin -> Start -> done }"
    )
    assert [n.id for n in graph.start_candidates()] == ["begin"]
    assert graph.node("Start").handler_type == "codergen"
    # type wins over shape: a diamond typed exit is the exit, an Msquare typed tool is not.
    typed = parse_dot(
        'digraph G { s [shape=Mdiamond]; x [shape=diamond, type="exit"]\n'
        'end [shape=Msquare, type="tool", tool_command=true]; s -> end -> x }'
    )
    assert typed.exit_ids() == {"x"}
    assert typed.node("end").handler_type == "tool"
