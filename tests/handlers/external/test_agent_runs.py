"""Each agent CLI end to end: ``attractor run`` starts a fake CLI that replays a
recorded stream (success, tool calls, turn limit, crash, auth failure), and the
run's events, files and outcome show what the agent did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runkit import events, invoke, read_json, write
from tests.handlers.external.agentkit import (
    EXECUTABLES,
    agent_env,
    install_fakes,
    one_node_graph,
    starts,
)

BACKENDS = tuple(EXECUTABLES)


def _run(
    workspace: Path, fakes: Path, graph: str, *args: str, **env: str | None
) -> tuple[Any, Path, Path]:
    write(workspace / "p.dot", graph)
    log = workspace / "starts.jsonl"
    result = invoke(["run", "p.dot", "--logs-dir", "logs", *args], agent_env(fakes, log, **env))
    return result, log, workspace / "logs"


def _of(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in events(run_dir) if e["type"] == kind]


@pytest.mark.parametrize("backend", BACKENDS)
def test_success_runs_the_cli_in_the_workdir_with_the_prompt_on_stdin(
    workspace: Path, fakes: Path, backend: str
) -> None:
    graph = one_node_graph(backend, "Plan the work for $goal", llm_model="big-model")
    graph = graph.replace("digraph agent {", 'digraph agent { goal="the parser"')
    result, log, logs = _run(workspace, fakes, graph)
    assert result.exit_code == 0, result.output + result.stderr
    (start,) = starts(log)
    assert start["cwd"] == str(workspace)
    assert start["prompt"] == "Plan the work for the parser"
    assert "big-model" in start["argv"]
    stage = logs / "work"
    assert (stage / "response.md").read_text() == "The plan is ready: three steps, tests first."
    status = read_json(stage / "status.json")
    assert status["outcome"] == "success"
    assert status["turns_used"] == 1
    assert status["usage"]["output_tokens"] > 0
    turns = [json.loads(line) for line in (stage / "transcript.jsonl").read_text().splitlines()]
    assert [t["turn"] for t in turns] == [1]
    started = _of(logs, "agent_turn_started")
    assert [(e["turn"], e["max_turns"]) for e in started] == [(1, 15)]


def test_claude_reports_its_cost(workspace: Path, fakes: Path) -> None:
    result, _, logs = _run(workspace, fakes, one_node_graph("claude-code", "go"))
    assert result.exit_code == 0, result.output + result.stderr
    status = read_json(logs / "work" / "status.json")
    usage = status["usage"]
    assert usage["cost"] == pytest.approx(0.0042)
    assert (usage["input_tokens"], usage["output_tokens"]) == (150, 14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tool_calls_become_events_tools_log_and_transcript_and_the_report_routes(
    workspace: Path, fakes: Path, backend: str
) -> None:
    graph = f"""digraph agent {{
        start [shape=Mdiamond]
        done  [shape=Msquare]
        other [shape=box, backend="simulate"]
        work  [shape=box, backend="{backend}", prompt="SCENARIO=tools write notes"]
        start -> work
        work -> done [label="ship"]
        work -> other [label="rework"]
        other -> done
    }}"""
    result, _, logs = _run(workspace, fakes, graph)
    assert result.exit_code == 0, result.output + result.stderr
    run_dir = logs
    tools = _of(run_dir, "tool_call_completed")
    assert len(tools) == 2
    assert all(t["node"] == "work" and not t["is_error"] for t in tools)
    assert "README.md" in tools[0]["output"]
    assert [t["turn"] for t in tools] == [1, 2]
    # Each call shows as started before its result, so a follower sees it run.
    kinds = [(e["type"], e.get("tool")) for e in events(run_dir) if e["type"].startswith("tool_")]
    assert kinds == [
        ("tool_call_started", tools[0]["tool"]),
        ("tool_call_completed", tools[0]["tool"]),
        ("tool_call_started", tools[1]["tool"]),
        ("tool_call_completed", tools[1]["tool"]),
    ]
    log = (run_dir / "work" / "tools.log").read_text()
    assert "--- turn 1:" in log and "README.md" in log and "--- turn 2:" in log
    transcript = (run_dir / "work" / "transcript.jsonl").read_text().splitlines()
    turns = [json.loads(line) for line in transcript]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    assert [len(t["tool_calls"]) for t in turns] == [1, 1, 0]
    completed = _of(run_dir, "stage_completed")
    assert [e["name"] for e in completed] == ["start", "work", "done"]
    assert completed[1]["preferred_label"] == "ship"
    status = read_json(run_dir / "work" / "status.json")
    assert status["turns_used"] == 3
    assert status["notes"] == "notes written"


@pytest.mark.parametrize("backend", BACKENDS)
def test_turn_limit_is_the_same_outcome_and_warning_as_the_built_in_loop(
    workspace: Path, fakes: Path, backend: str
) -> None:
    graph = one_node_graph(
        backend, "SCENARIO=turn_limit fix the tests", max_turns="2", on_turn_limit="fail"
    )
    result, log, logs = _run(workspace, fakes, graph)
    assert result.exit_code == 1
    assert "warning: node work reached its turn limit (2 of 2 turns" in result.stderr
    run_dir = logs
    (limit,) = _of(run_dir, "turn_limit_reached")
    assert (limit["turns_used"], limit["limit"]) == (2, 2)
    status = read_json(run_dir / "work" / "status.json")
    assert status["outcome"] == "fail"
    assert status["failure_reason"].startswith("turn limit reached: 2 of 2 turns")
    assert status["turn_limit_reached"] is True
    assert [e["turn"] for e in _of(run_dir, "agent_turn_started")] == [1, 2]
    if backend == "claude-code":  # the CLI's own flag enforces the budget
        argv = starts(log)[0]["argv"]
        assert argv[argv.index("--max-turns") + 1] == "2"


@pytest.mark.parametrize("backend", BACKENDS)
def test_turn_limit_with_partial_success_lets_the_run_go_on(
    workspace: Path, fakes: Path, backend: str
) -> None:
    graph = one_node_graph(
        backend, "SCENARIO=turn_limit fix", max_turns="2", on_turn_limit="partial_success"
    )
    result, _, logs = _run(workspace, fakes, graph)
    assert result.exit_code == 0, result.output + result.stderr
    status = read_json(logs / "work" / "status.json")
    assert status["outcome"] == "partial_success"


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        ("claude-code", "claude-code exited with code 3: RangeError: Maximum call stack"),
        ("codex", "codex exited with code 101: attempt to subtract with overflow"),
        ("gemini-cli", "gemini-cli reported an error: [API Error: got status: 500"),
    ],
)
def test_a_crash_fails_the_node_with_the_cli_s_own_words(
    workspace: Path, fakes: Path, backend: str, said: str
) -> None:
    result, _, logs = _run(workspace, fakes, one_node_graph(backend, "SCENARIO=crash go"))
    assert result.exit_code == 1
    status = read_json(logs / "work" / "status.json")
    assert status["outcome"] == "fail"
    assert status["failure_reason"].startswith(said), status["failure_reason"]


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        ("claude-code", "Not logged in · Please run /login"),
        ("codex", "unexpected status 401 Unauthorized"),
        ("gemini-cli", "Please set an Auth method"),
    ],
)
def test_an_auth_failure_mid_run_says_not_logged_in(
    workspace: Path, fakes: Path, backend: str, said: str
) -> None:
    result, _, logs = _run(workspace, fakes, one_node_graph(backend, "SCENARIO=auth go"))
    assert result.exit_code == 1
    reason = read_json(logs / "work" / "status.json")["failure_reason"]
    assert reason.startswith(f"{backend} is not logged in ({said}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_missing_executable_stops_the_run_before_any_node(
    workspace: Path, tmp_path: Path, backend: str
) -> None:
    empty = install_fakes(tmp_path / "empty", names=())
    graph = one_node_graph(backend, "go")
    # No git on this PATH either: without --workspace none the run would stop for that first.
    result, log, logs = _run(workspace, empty, graph, "--workspace", "none", PATH=str(empty))
    assert result.exit_code == 2
    name = EXECUTABLES[backend]
    assert f"node work: backend {backend} needs the `{name}` executable" in result.stderr
    assert "npm install -g" in result.stderr
    assert not logs.exists()


@pytest.mark.parametrize(
    ("backend", "said"),
    [
        ("claude-code", "`claude auth status --text` says: Not logged in"),
        ("codex", "`codex login status` says: Not logged in"),
        ("gemini-cli", "none of GEMINI_API_KEY"),
    ],
)
def test_a_cli_that_is_not_logged_in_stops_the_run_before_any_node(
    workspace: Path, fakes: Path, tmp_path: Path, backend: str, said: str
) -> None:
    graph = one_node_graph(backend, "go")
    result, log, logs = _run(
        workspace,
        fakes,
        graph,
        FAKE_AGENT_LOGGED_OUT="1",
        GEMINI_API_KEY=None,
        HOME=str(tmp_path / "home"),
    )
    assert result.exit_code == 2
    assert f"node work: backend {backend} is not logged in ({said}" in result.stderr
    assert starts(log) == []
    assert not logs.exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_agent_turns_count_against_the_run_budget(
    workspace: Path, fakes: Path, backend: str
) -> None:
    graph = one_node_graph(backend, "SCENARIO=tools write notes")
    result, _, logs = _run(workspace, fakes, graph, "--max-total-turns", "2")
    assert result.exit_code == 1
    status = read_json(logs / "work" / "status.json")
    assert status["failure_reason"] == (
        "run turn budget exhausted: 2 of 2 model requests (--max-total-turns)"
    )
    assert status["turns_used"] == 2


def test_a_retried_node_starts_the_cli_again_and_each_attempt_keeps_its_transcript(
    workspace: Path, fakes: Path
) -> None:
    graph = one_node_graph("claude-code", "SCENARIO=crash go", max_retries="1")
    result, log, logs = _run(workspace, fakes, graph)
    assert result.exit_code == 1
    assert len(starts(log)) == 2
    # The latest attempt's files are in the node's folder, the first one's beside them.
    for where, attempt in ((logs / "work" / "v1-a1", 1), (logs / "work", 2)):
        transcript = (where / "transcript.jsonl").read_text().splitlines()
        assert [json.loads(line)["attempt"] for line in transcript] == [attempt]


def test_agent_cli_tokens_count_toward_the_run_token_budget(workspace: Path, fakes: Path) -> None:
    graph = one_node_graph("claude-code", "go").replace(
        "start -> work -> done",
        'again [shape=box, backend="claude-code", prompt="go"]\n start -> work -> again -> done',
    )
    result, log, logs = _run(workspace, fakes, graph, "--max-total-tokens", "100")
    assert result.exit_code == 1, result.output
    # work's CLI spent 164 tokens ($0.0042): no CLI starts a turn for again.
    reason = "run token budget exhausted: 164 of 100 tokens (--max-total-tokens)"
    assert reason in result.output
    assert read_json(logs / "again" / "status.json")["failure_reason"] == reason
    usage = read_json(logs / "manifest.json")["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (150, 14)
    assert usage["cost"] == pytest.approx(0.0042)
