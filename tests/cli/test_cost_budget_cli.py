"""Token and cost budgets, prices and usage totals through the real CLI.

The scripted model reports the same usage on every answer; a price for it in
the config file gives every request a known cost: 400 fresh input tokens at
$100, 600 cached at $10 and 100 output at $1,000 per million, so $0.146 each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.cli.runkit import events, invoke, only_run_dir, read_json, run_dirs, write

USAGE = {"input_tokens": 1000, "output_tokens": 100, "cache_read_tokens": 600}
PER_REQUEST = 0.146
PRICES = "[prices.scripted]\ninput = 100.0\noutput = 1000.0\ncache_read = 10.0\n"
NEVER_STOPS = {
    "responses": [
        {
            "text": "still busy",
            "tool_calls": [{"name": "list_dir", "arguments": {}}],
            "usage": USAGE,
        }
    ],
    "then": "repeat_last",
}
TWO_NODES = """\
digraph two {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    a     [prompt="first", max_turns=10]
    b     [prompt="second", max_turns=10]
    start -> a -> b -> done
}
"""


def _parallel(branches: int, max_turns: int) -> str:
    names = [f"b{i}" for i in range(1, branches + 1)]
    nodes = "\n".join(
        f'    {n} [prompt="branch {n}", max_turns={max_turns}, on_turn_limit=partial_success]'
        for n in names
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


def _run(
    workspace: Path,
    dot: str,
    *args: str,
    config: str = PRICES,
    env: dict[str, str] | None = None,
) -> Result:
    write(workspace / "p.dot", dot)
    write(workspace / "model.json", json.dumps(NEVER_STOPS))
    write(workspace / "attractor.toml", config)
    command = ["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}"]
    return invoke([*command, "--backend", "scripted:model.json", *args], env=env)


def _lines(run_dir: Path, node: str) -> list[dict[str, Any]]:
    path = run_dir / node / "transcript.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_max_cost_gives_the_running_agent_its_final_turn_and_fails_the_run(
    workspace: Path,
) -> None:
    result = _run(workspace, TWO_NODES, "--max-cost", "0.40")
    assert result.exit_code == 1, result.output
    run_dir = only_run_dir(workspace / "runs")
    # $0.146 a request: after the third the budget is spent; the fourth is the final turn.
    assert [line["kind"] for line in _lines(run_dir, "a")] == ["work", "work", "work", "final"]
    assert _lines(run_dir, "a")[-1]["tools_offered"] == []
    assert _lines(run_dir, "b") == []  # no new agent starts on a spent budget
    reason = "run cost budget exhausted: $0.5840 of $0.4000 (--max-cost)"
    assert reason in result.output
    status = read_json(run_dir / "a" / "status.json")
    assert status["outcome"] == "fail" and status["failure_reason"] == reason
    assert status["usage"]["cost"] == pytest.approx(4 * PER_REQUEST)
    manifest = read_json(run_dir / "manifest.json")
    assert manifest["failure_reason"] == reason
    assert manifest["usage"]["cost"] == pytest.approx(4 * PER_REQUEST)
    assert manifest["usage"]["cache_read_tokens"] == 4 * 600


@pytest.mark.parametrize(
    ("args", "env", "config", "source"),
    [
        ([], {"ATTRACTOR_MAX_COST": "$0.40"}, PRICES, "ATTRACTOR_MAX_COST"),
        ([], {}, "max_cost = 0.4\n" + PRICES, "attractor.toml: max_cost"),
        (["--max-cost", "0.40"], {"ATTRACTOR_MAX_COST": "9"}, PRICES, "--max-cost"),
    ],
)
def test_the_reason_names_where_the_cost_limit_came_from(
    workspace: Path, args: list[str], env: dict[str, str], config: str, source: str
) -> None:
    result = _run(workspace, TWO_NODES, *args, config=config, env=env)
    assert result.exit_code == 1, result.output
    assert f"run cost budget exhausted: $0.5840 of $0.4000 ({source})" in result.output


def test_max_total_tokens_stops_the_run_after_the_final_turn(workspace: Path) -> None:
    result = _run(workspace, TWO_NODES, "--max-total-tokens", "2500")
    assert result.exit_code == 1, result.output
    run_dir = only_run_dir(workspace / "runs")
    assert [line["kind"] for line in _lines(run_dir, "a")] == ["work", "work", "work", "final"]
    assert "run token budget exhausted: 4,400 of 2,500 tokens (--max-total-tokens)" in result.output


def test_every_parallel_agent_gets_its_final_turn_when_the_cost_runs_out(
    workspace: Path,
) -> None:
    result = _run(workspace, _parallel(3, 10), "--max-cost", "0.5")
    assert result.exit_code == 1, result.output
    run_dir = only_run_dir(workspace / "runs")
    transcripts = {node: _lines(run_dir, node) for node in ("b1", "b2", "b3")}
    started = {node: lines for node, lines in transcripts.items() if lines}
    assert started, result.output
    for node, lines in started.items():
        assert lines[-1]["kind"] == "final", (node, [line["kind"] for line in lines])
        assert lines[-1]["tools_offered"] == []
    requests = sum(len(lines) for lines in started.values())
    # The budget was spent after four requests; each agent then made one more at most.
    assert requests <= 4 + len(started)
    assert "run cost budget exhausted" in result.output
    manifest = read_json(run_dir / "manifest.json")
    assert manifest["usage"]["cost"] == pytest.approx(requests * PER_REQUEST)


def test_usage_and_cost_are_summed_across_parallel_branches(workspace: Path) -> None:
    result = _run(workspace, _parallel(3, 3))
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    per_node = {
        node: read_json(run_dir / node / "status.json")["usage"] for node in ("b1", "b2", "b3")
    }
    for usage in per_node.values():
        assert usage["input_tokens"] == 3 * 1000 and usage["cache_read_tokens"] == 3 * 600
        assert usage["cost"] == pytest.approx(3 * PER_REQUEST)
    manifest = read_json(run_dir / "manifest.json")["usage"]
    assert manifest["input_tokens"] == 9 * 1000 and manifest["output_tokens"] == 9 * 100
    assert manifest["cost"] == pytest.approx(9 * PER_REQUEST)
    turn_tokens = [
        e["input_tokens"] for e in events(run_dir) if e["type"] == "agent_turn_completed"
    ]
    assert sum(turn_tokens) == manifest["input_tokens"]
    assert "tokens: 9,000 in (5,400 cached) / 900 out; cost: $1.31" in result.output


@pytest.mark.parametrize(
    ("args", "env", "config", "message"),
    [
        (
            ["--max-cost", "0"],
            {},
            PRICES,
            '--max-cost="0": expected an amount of US dollars above zero, like 2.50',
        ),
        (
            [],
            {"ATTRACTOR_MAX_COST": "lots"},
            PRICES,
            'ATTRACTOR_MAX_COST="lots": expected an amount of US dollars above zero',
        ),
        (
            [],
            {"ATTRACTOR_MAX_TOTAL_TOKENS": "-5"},
            PRICES,
            'ATTRACTOR_MAX_TOTAL_TOKENS="-5": must be a positive integer',
        ),
        (
            [],
            {},
            "max_total_tokens = 0\n",
            'attractor.toml: max_total_tokens="0": must be a positive integer',
        ),
        (
            [],
            {},
            '[prices.scripted]\ninput = "cheap"\noutput = 1.0\n',
            "attractor.toml: prices.scripted.input: expected a number of US dollars per million",
        ),
        (
            [],
            {},
            "[prices.scripted]\ninput = 1.0\n",
            "attractor.toml: prices.scripted: output is missing",
        ),
        (
            ["--max-cost", "1"],
            {},
            "",
            "--max-cost needs the price of model 'scripted', which attractor does not know",
        ),
    ],
)
def test_bad_budgets_and_prices_exit_2_naming_their_source(
    workspace: Path, args: list[str], env: dict[str, str], config: str, message: str
) -> None:
    result = _run(workspace, TWO_NODES, *args, config=config, env=env)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {message}"), result.stderr
    assert run_dirs(workspace / "runs") == []
