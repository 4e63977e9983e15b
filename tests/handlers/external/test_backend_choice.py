"""Which backend answers a node: node attribute, graph attribute, run setting;
and what lint says about the ``backend`` attribute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runkit import events, invoke, read_json, write
from tests.handlers.external.agentkit import agent_env, starts

MIXED = """digraph mixed {
    backend="codex"
    start [shape=Mdiamond]
    done  [shape=Msquare]
    plan  [shape=box, prompt="plan it"]
    build [shape=box, backend="claude-code", prompt="build it"]
    check [shape=box, backend="simulate", prompt="check it"]
    start -> plan -> build -> check -> done
}"""


def _run(workspace: Path, fakes: Path, graph: str, *args: str) -> tuple[int, str, Path]:
    write(workspace / "p.dot", graph)
    log = workspace / "starts.jsonl"
    result = invoke(["run", "p.dot", "--logs-dir", "logs", *args], agent_env(fakes, log))
    return result.exit_code, result.output + result.stderr, log


def test_node_attribute_beats_graph_attribute_beats_the_run_backend(
    workspace: Path, fakes: Path
) -> None:
    code, output, log = _run(workspace, fakes, MIXED, "--backend", "gemini-cli")
    assert code == 0, output
    # Each agent gets the node's prompt (build's after the run-so-far preamble).
    assert [(s["cli"], s["prompt"].rpartition("---\n\n")[2]) for s in starts(log)] == [
        ("codex", "plan it"),
        ("claude", "build it"),
    ]
    check = read_json(workspace / "logs" / "check" / "status.json")
    assert check["notes"] == "Stage completed: check"  # the simulate backend


def test_the_run_backend_names_an_agent_for_every_node_and_lends_it_the_run_model(
    workspace: Path, fakes: Path
) -> None:
    graph = MIXED.replace('backend="codex"', "").replace('backend="claude-code", ', "")
    graph = graph.replace('backend="simulate", ', "")
    code, output, log = _run(workspace, fakes, graph, "--backend", "gemini-cli", "--model", "m1")
    assert code == 0, output
    assert [s["cli"] for s in starts(log)] == ["gemini"] * 3
    assert all(s["argv"][-2:] == ["--model", "m1"] for s in starts(log))


def test_an_explicit_simulate_run_stays_a_dry_run(workspace: Path, fakes: Path) -> None:
    code, output, log = _run(workspace, fakes, MIXED, "--backend", "simulate")
    assert code == 0, output
    assert starts(log) == []
    kinds = {e["type"] for e in events(workspace / "logs")}
    assert "agent_turn_started" not in kinds


def test_a_node_can_go_back_to_the_built_in_agent(workspace: Path, fakes: Path) -> None:
    script = workspace / "replies.json"
    script.write_text(json.dumps({"responses": [{"text": "built-in answer"}]}))
    graph = MIXED.replace('backend="simulate"', 'backend="llm"')
    code, output, log = _run(workspace, fakes, graph, "--backend", f"scripted:{script}")
    assert code == 0, output
    assert [s["cli"] for s in starts(log)] == ["codex", "claude"]
    answer = (workspace / "logs" / "check" / "response.md").read_text()
    assert answer == "built-in answer"


def test_settings_accept_agent_backends_and_name_them_when_wrong(workspace: Path) -> None:
    write(workspace / "p.dot", MIXED)
    result = invoke(["run", "p.dot", "--backend", "claude"])
    assert result.exit_code == 2
    assert "claude-code, codex, gemini-cli" in result.stderr


def _lint(workspace: Path, graph: str) -> list[dict[str, object]]:
    write(workspace / "p.dot", graph)
    result = invoke(["lint", "p.dot", "--format", "json"])
    found: list[dict[str, object]] = json.loads(result.output)
    return found


def test_lint_rejects_an_unknown_backend_value(workspace: Path) -> None:
    found = _lint(workspace, MIXED.replace('backend="claude-code"', 'backend="claude"'))
    (bad,) = [d for d in found if d["rule"] == "attribute_value"]
    assert bad["severity"] == "error"
    assert "gemini-cli" in str(bad["message"])


@pytest.mark.parametrize(
    ("attrs", "needle"),
    [
        ('sprint_limit="3"', "sprint_limit on build is ignored by backend claude-code"),
        ('tool_hooks.pre="echo hi"', "tool_hooks.pre on build is ignored by backend claude-code"),
    ],
)
def test_lint_warns_about_attributes_an_agent_cli_ignores(
    workspace: Path, attrs: str, needle: str
) -> None:
    found = _lint(
        workspace, MIXED.replace('backend="claude-code",', f'backend="claude-code", {attrs},')
    )
    warnings = [d for d in found if d["rule"] == "backend"]
    assert [d["severity"] for d in warnings] == ["warning"]
    assert needle in str(warnings[0]["message"])


def test_lint_warns_about_reasoning_effort_on_gemini_only(workspace: Path) -> None:
    graph = MIXED.replace('prompt="plan it"', 'prompt="plan it", reasoning_effort="low"')
    assert [d for d in _lint(workspace, graph) if d["rule"] == "backend"] == []
    gemini = graph.replace('backend="codex"', 'backend="gemini-cli"')
    (warning,) = [d for d in _lint(workspace, gemini) if d["rule"] == "backend"]
    assert "reasoning_effort on plan is ignored by backend gemini-cli" in str(warning["message"])


def test_lint_warns_about_a_backend_on_a_node_that_is_not_an_llm_node(workspace: Path) -> None:
    graph = MIXED.replace("done  [shape=Msquare]", 'done  [shape=Msquare, backend="codex"]')
    (warning,) = [d for d in _lint(workspace, graph) if d["rule"] == "backend"]
    assert warning["node"] == "done"
    assert "has no effect: only LLM nodes have one (done is exit)" in str(warning["message"])
