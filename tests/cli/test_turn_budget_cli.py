"""Turn budgets through the real CLI, with the scripted backend as the model.

Most scripts use ``then: repeat_last`` with a tool call: a model that never
stops on its own, so only the budget can end the node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.cli.runkit import events, invoke, only_run_dir, read_json, run_dirs, write

NEVER_STOPS = {
    "responses": [{"text": "still busy", "tool_calls": [{"name": "list_dir", "arguments": {}}]}],
    "then": "repeat_last",
}


def _pipeline(node_attrs: str = "", graph_attrs: str = "") -> str:
    extra = f", {node_attrs}" if node_attrs else ""
    graph = f"graph [{graph_attrs}]" if graph_attrs else ""
    return f"""\
digraph budget {{
    {graph}
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [prompt="Keep working"{extra}]
    start -> work -> done
}}
"""


def _run(
    workspace: Path,
    dot: str,
    *args: str,
    script: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Result:
    write(workspace / "p.dot", dot)
    write(workspace / "model.json", json.dumps(script or NEVER_STOPS))
    command = [
        "run",
        "p.dot",
        "--logs-dir",
        "runs/{timestamp}-{graph}",
        "--backend",
        "scripted:model.json",
        *args,
    ]
    return invoke(command, env=env)


def _transcript(workspace: Path, node: str = "work") -> list[dict[str, Any]]:
    path = only_run_dir(workspace / "runs") / node / "transcript.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _status(workspace: Path, node: str = "work") -> dict[str, Any]:
    status = read_json(only_run_dir(workspace / "runs") / node / "status.json")
    assert isinstance(status, dict)
    return status


# -- exact budgets ----------------------------------------------------------------


def test_node_max_turns_3_gives_exactly_3_requests_the_last_without_tools(
    workspace: Path,
) -> None:
    result = _run(workspace, _pipeline("max_turns=3"))
    assert result.exit_code == 1, result.output
    lines = _transcript(workspace)
    assert [line["turn"] for line in lines] == [1, 2, 3]
    assert [line["kind"] for line in lines] == ["work", "work", "final"]
    assert lines[-1]["tools_offered"] == []
    assert "search_file" in lines[0]["tools_offered"]
    status = _status(workspace)
    assert status["outcome"] == "fail"
    assert status["turns_used"] == 3 and status["turn_limit_reached"] is True
    assert status["failure_reason"] == "turn limit reached: 3 of 3 turns (node max_turns)"
    assert status["context_updates"]["agent.turns_used"] == 3
    assert status["context_updates"]["agent.turn_limit_reached"] is True
    assert set(status["turn_budget"]) == {
        "effective", "source", "node", "graph_default", "profile", "profile_default",
        "auto_patterns", "cap", "cap_source",
    }  # fmt: skip
    run_dir = only_run_dir(workspace / "runs")
    assert (run_dir / "work" / "response.md").read_text() == "still busy"
    kinds = [e["type"] for e in events(run_dir)]
    assert kinds.count("agent_turn_started") == 3
    assert kinds.count("turn_budget_resolved") == 1
    assert kinds.count("turn_limit_reached") == 1


def test_max_turns_flag_caps_a_node_that_says_30(workspace: Path) -> None:
    result = _run(workspace, _pipeline("max_turns=30"), "--max-turns", "2")
    assert result.exit_code == 1, result.output
    assert len(_transcript(workspace)) == 2
    budget = _status(workspace)["turn_budget"]
    assert (budget["effective"], budget["node"], budget["cap"]) == (2, 30, 2)
    assert budget["cap_source"] == "--max-turns"
    reason = "turn limit reached: 2 of 2 turns (cap from --max-turns)"
    assert _status(workspace)["failure_reason"] == reason


def test_a_node_that_says_1_stays_at_1_under_a_cap_of_5(workspace: Path) -> None:
    result = _run(workspace, _pipeline("max_turns=1"), "--max-turns", "5")
    assert result.exit_code == 1, result.output
    lines = _transcript(workspace)
    assert len(lines) == 1 and lines[0]["tools_offered"] == []
    assert _status(workspace)["turn_budget"]["source"] == "node max_turns"


def test_env_cap_applies_without_a_flag_and_the_flag_beats_it(workspace: Path) -> None:
    env = {"ATTRACTOR_MAX_TURNS": "2"}
    assert _run(workspace, _pipeline("max_turns=30"), env=env).exit_code == 1
    assert len(_transcript(workspace)) == 2
    assert _status(workspace)["turn_budget"]["cap_source"] == "ATTRACTOR_MAX_TURNS"
    shutil.rmtree(workspace / "runs")
    assert _run(workspace, _pipeline("max_turns=30"), "--max-turns", "4", env=env).exit_code == 1
    assert len(_transcript(workspace)) == 4
    assert _status(workspace)["turn_budget"]["cap_source"] == "--max-turns"


def test_config_file_cap_applies(workspace: Path) -> None:
    write(workspace / "attractor.toml", "max_turns = 3\n")
    assert _run(workspace, _pipeline("max_turns=30")).exit_code == 1
    assert len(_transcript(workspace)) == 3
    assert _status(workspace)["turn_budget"]["cap_source"] == "attractor.toml: max_turns"


def test_profile_default_applies_to_a_node_without_max_turns(workspace: Path) -> None:
    assert _run(workspace, _pipeline(), "--profile", "smoke").exit_code == 1
    assert len(_transcript(workspace)) == 5
    budget = _status(workspace)["turn_budget"]
    assert (budget["profile"], budget["profile_default"]) == ("smoke", 5)
    assert budget["source"] == "profile smoke default"


def test_graph_default_max_turns_beats_the_profile(workspace: Path) -> None:
    assert _run(workspace, _pipeline(graph_attrs="default_max_turns=4")).exit_code == 1
    assert len(_transcript(workspace)) == 4


def test_auto_budget_records_the_patterns(workspace: Path) -> None:
    script = {"responses": [{"text": "fixed"}], "then": "stop"}
    dot = _pipeline('max_turns="auto"').replace("Keep working", "Fix the bug in parser.py")
    result = _run(workspace, dot, script=script)
    assert result.exit_code == 0, result.output
    budget = _status(workspace)["turn_budget"]
    assert (budget["effective"], budget["auto_patterns"]) == (20, ["debugging"])
    assert _status(workspace)["turn_limit_reached"] is False


@pytest.mark.parametrize(
    ("args", "env", "files", "message"),
    [
        (["--max-turns", "0"], {}, {}, '--max-turns="0": must be an integer from 1 to 500'),
        (["--max-turns", "abc"], {}, {}, '--max-turns="abc": must be an integer from 1 to 500'),
        (
            [],
            {"ATTRACTOR_MAX_TURNS": "0"},
            {},
            'ATTRACTOR_MAX_TURNS="0": must be an integer from 1 to 500',
        ),
        (
            [],
            {"ATTRACTOR_MAX_TURNS": "501"},
            {},
            'ATTRACTOR_MAX_TURNS="501": must be an integer from 1 to 500',
        ),
        (
            [],
            {},
            {"attractor.toml": "max_turns = 0\n"},
            'attractor.toml: max_turns="0": must be an integer from 1 to 500',
        ),
    ],
)
def test_invalid_caps_exit_2_naming_their_source(
    workspace: Path, args: list[str], env: dict[str, str], files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        write(workspace / name, text)
    result = _run(workspace, _pipeline("max_turns=3"), *args, env=env)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {message}")
    assert run_dirs(workspace / "runs") == []


@pytest.mark.parametrize("value", ["0", "501", "many"])
def test_invalid_node_max_turns_exits_2_naming_the_attribute(workspace: Path, value: str) -> None:
    result = _run(workspace, _pipeline(f'max_turns="{value}"'))
    assert result.exit_code == 2, result.output
    assert "max_turns" in result.output
    assert run_dirs(workspace / "runs") == []


def test_a_bad_script_file_exits_2_naming_it(workspace: Path) -> None:
    write(workspace / "p.dot", _pipeline("max_turns=3"))
    write(workspace / "bad.json", '{"responses": [{"txt": "hi"}]}')
    result = invoke(
        ["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}", "--backend", "scripted:bad.json"]
    )
    assert result.exit_code == 2, result.output
    assert "bad.json" in result.stderr and "txt" in result.stderr


# -- reflection -------------------------------------------------------------------


def test_sprint_limit_2_of_7_reflects_at_turns_3_and_6(workspace: Path) -> None:
    result = _run(workspace, _pipeline("max_turns=7, sprint_limit=2"))
    assert result.exit_code == 1, result.output
    lines = _transcript(workspace)
    assert [line["turn"] for line in lines if line["kind"] == "reflection"] == [3, 6]
    assert [line["kind"] for line in lines][-1] == "final"
    assert all(line["tools_offered"] == [] for line in lines if line["kind"] != "work")
    run_dir = only_run_dir(workspace / "runs")
    assert (run_dir / "work" / "reflections.md").read_text().count("## Reflection") == 2
    reflected = [e["turn"] for e in events(run_dir) if e["type"] == "agent_reflection"]
    assert reflected == [3, 6]


def test_graph_default_sprint_limit(workspace: Path) -> None:
    dot = _pipeline("max_turns=7", graph_attrs="default_sprint_limit=3")
    assert _run(workspace, dot).exit_code == 1
    kinds = [line["kind"] for line in _transcript(workspace)]
    assert kinds == ["work", "work", "work", "reflection", "work", "work", "final"]


# -- on_turn_limit ----------------------------------------------------------------

ROUTED = """\
digraph routed {{
    start   [shape=Mdiamond]
    done    [shape=Msquare]
    work    [prompt="Keep working", max_turns=2 {attrs}]
    ok      [shape=parallelogram, tool_command="echo ok"]
    rescue  [shape=parallelogram, tool_command="echo rescue"]
    start -> work
    work -> ok     [condition="outcome=success"]
    work -> ok     [condition="outcome=partial_success"]
    work -> rescue [condition="outcome=fail"]
    ok -> done
    rescue -> done
}}
"""


def test_on_turn_limit_fail_takes_the_fail_edge(workspace: Path) -> None:
    result = _run(workspace, ROUTED.format(attrs=""))
    run_dir = only_run_dir(workspace / "runs")
    assert (run_dir / "rescue").is_dir() and not (run_dir / "ok").exists(), result.output
    assert _status(workspace)["outcome"] == "fail"


def test_on_turn_limit_partial_success_takes_the_success_path(workspace: Path) -> None:
    result = _run(workspace, ROUTED.format(attrs=", on_turn_limit=partial_success"))
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    assert (run_dir / "ok").is_dir() and not (run_dir / "rescue").exists()
    status = _status(workspace)
    assert status["outcome"] == "partial_success" and status["turn_limit_reached"] is True


def test_on_turn_limit_retry_runs_the_node_again(workspace: Path) -> None:
    _run(workspace, ROUTED.format(attrs=", on_turn_limit=retry, max_retries=1"))
    run_dir = only_run_dir(workspace / "runs")
    started = [e["name"] for e in events(run_dir) if e["type"] == "stage_started"]
    assert started.count("work") == 2
    budgets = [e for e in events(run_dir) if e["type"] == "turn_budget_resolved"]
    assert len(budgets) == 2
    turns = [e for e in events(run_dir) if e["type"] == "agent_turn_started"]
    assert len(turns) == 4  # two attempts of two turns each
    # Each attempt keeps its own transcript: the first beside the node's folder.
    folder = only_run_dir(workspace / "runs") / "work"
    first = (folder / "v1-a1" / "transcript.jsonl").read_text().splitlines()
    lines = [json.loads(line) for line in first] + _transcript(workspace)
    assert [(line["attempt"], line["turn"]) for line in lines] == [(1, 1), (1, 2), (2, 1), (2, 2)]


# -- the run-wide budget ------------------------------------------------------------

TWO_NODES = """\
digraph two {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    a     [prompt="first", max_turns=3, on_turn_limit=partial_success]
    b     [prompt="second", max_turns=3, on_turn_limit=partial_success]
    start -> a -> b -> done
}
"""


def test_max_total_turns_stops_a_two_node_run(workspace: Path) -> None:
    result = _run(workspace, TWO_NODES, "--max-total-turns", "4")
    assert result.exit_code == 1, result.output
    assert [line["kind"] for line in _transcript(workspace, "a")] == ["work", "work", "final"]
    assert [line["kind"] for line in _transcript(workspace, "b")] == ["final"]
    assert "run turn budget exhausted: 4 of 4 model requests (--max-total-turns)" in result.output
    assert _status(workspace, "b")["outcome"] == "fail"
    assert not (only_run_dir(workspace / "runs") / "done").exists()


def _parallel_agents(branches: int) -> str:
    names = [f"b{i}" for i in range(1, branches + 1)]
    nodes = "\n".join(
        f'    {n} [prompt="branch {n}", max_turns=10, on_turn_limit=partial_success]' for n in names
    )
    edges = "\n".join(f"    fan -> {n} -> join" for n in names)
    return f"""\
digraph fan {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    fan   [shape=component, join_policy=wait_all]
    join  [shape=tripleoctagon]
{nodes}
{edges}
    start -> fan
    join -> done
}}
"""


@pytest.mark.parametrize("limit", [3, 4, 5, 7])
def test_max_total_turns_gives_every_parallel_agent_a_final_turn(
    workspace: Path, limit: int
) -> None:
    result = _run(workspace, _parallel_agents(3), "--max-total-turns", str(limit))
    assert result.exit_code == 1, result.output
    run_dir = only_run_dir(workspace / "runs")
    transcripts = {
        node: _transcript(workspace, node)
        for node in ("b1", "b2", "b3")
        if (run_dir / node / "transcript.jsonl").exists()
    }
    total = sum(len(lines) for lines in transcripts.values())
    assert total <= limit
    turns = [e for e in events(run_dir) if e["type"] == "agent_turn_started"]
    assert len(turns) == total
    assert transcripts, result.output
    for node, lines in transcripts.items():
        # No agent is cut off after a work turn: where it got a request, it got a summary.
        assert lines[-1]["kind"] == "final", (node, [line["kind"] for line in lines])
        assert lines[-1]["tools_offered"] == []
    assert "run turn budget exhausted" in result.output


# -- tools through a real run ---------------------------------------------------------


def _tool_outputs(workspace: Path) -> list[dict[str, Any]]:
    return [
        e for e in events(only_run_dir(workspace / "runs")) if e["type"] == "tool_call_completed"
    ]


def test_search_file_literal_regex_and_escapes(workspace: Path) -> None:
    project = workspace / "project"
    write(project / "src" / "engine.py", "def new_engine():\n    return Engine(42)\n")
    write(workspace / "secret.txt", "Engine secret\n")
    os.symlink(workspace / "secret.txt", project / "leak.txt")
    calls = [
        {"name": "search_file", "arguments": {"pattern": "Engine("}},
        {"name": "search_file", "arguments": {"pattern": r"Engine\(\d+\)", "regex": True}},
        {"name": "search_file", "arguments": {"pattern": "Engine", "path": "../"}},
        {"name": "search_file", "arguments": {"pattern": "Engine", "path": "leak.txt"}},
    ]
    script = {"responses": [{"text": "", "tool_calls": calls}, {"text": "found it"}]}
    result = _run(workspace, _pipeline(), "--workdir", "project", script=script)
    assert result.exit_code == 0, result.output
    outputs = [(e["output"], e["is_error"]) for e in _tool_outputs(workspace)]
    assert outputs[0] == ("src/engine.py:2:     return Engine(42)", False)
    assert outputs[1] == ("src/engine.py:2:     return Engine(42)", False)
    for output, is_error in outputs[2:]:
        assert is_error and "outside the working directory" in output
    assert all("secret" not in output for output, _ in outputs)


def _alive(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


def test_a_shell_command_past_its_timeout_is_killed_with_its_children(workspace: Path) -> None:
    marker = f"attractor_test_{os.getpid()}_{id(workspace)}"
    write(workspace / "slow.sh", f"echo started\nsh -c 'sleep 60; : {marker}' &\nsleep 61\n")
    call = {"name": "shell", "arguments": {"command": "sh slow.sh", "timeout": 0.5}}
    script = {"responses": [{"text": "", "tool_calls": [call]}, {"text": "it hung"}]}
    result = _run(workspace, _pipeline(), "--workdir", ".", script=script)
    assert result.exit_code == 0, result.output
    (output,) = [e["output"] for e in _tool_outputs(workspace)]
    assert output.startswith("started\n") and "timed out after 0.5s" in output
    assert _alive(marker) == []
