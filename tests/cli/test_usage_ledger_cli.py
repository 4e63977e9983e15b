"""Every attempt's tokens and cost count, through retries, a crash and a resume.

The scripted model answers each request with a known usage, and a price for it
in attractor.toml gives each a known cost (input $100, output $1,000 per
million tokens). Node ``a`` fails twice before it succeeds; the run is killed
with SIGKILL while ``slow`` sleeps; the resume runs ``b``, which fails once.
Every total a user can read must be the sum of all five requests.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runkit import (
    finish,
    invoke,
    only_run_dir,
    read_json,
    spawn,
    wait_for,
    write,
)

#: Also: no workspace. The runs are steered with files written in the workdir between
#: sessions, which a workspace's resume would put back (see tests/workspace).
PRICES = 'workspace = "none"\n[prices.scripted]\ninput = 100.0\noutput = 1000.0\n'
PIPELINE = """\
digraph spend {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    a     [prompt="first", max_retries=2]
    slow  [shape=parallelogram,
           tool_command="test -f reached && exit 0; touch reached; sleep 60"]
    b     [prompt="second", max_retries=1]
    start -> a -> slow -> b -> done
}
"""
#: (input, output) tokens of each request: a's three attempts, then b's two.
A_ATTEMPTS = [(1000, 100), (2000, 200), (3000, 300)]
B_ATTEMPTS = [(400, 40), (500, 50)]


def _cost(tokens: list[tuple[int, int]]) -> float:
    return sum(i * 100e-6 + o * 1000e-6 for i, o in tokens)


def _report(outcome: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "text": "",
        "tool_calls": [{"name": "report_outcome", "arguments": {"outcome": outcome}}],
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def _script(workspace: Path, attempts: list[tuple[int, int]]) -> None:
    outcomes = ["fail"] * (len(attempts) - 1) + ["success"]
    responses = [_report(o, u) for o, u in zip(outcomes, attempts, strict=True)]
    write(workspace / "model.json", json.dumps({"responses": responses, "then": "stop"}))


def _crash_in_slow(workspace: Path) -> Path:
    """Run until ``slow`` sleeps, SIGKILL the run, and return its directory."""
    write(workspace / "p.dot", PIPELINE)
    write(workspace / "attractor.toml", PRICES)
    _script(workspace, A_ATTEMPTS)
    logs = "runs/{timestamp}-{graph}"
    proc = spawn(
        ["run", "p.dot", "--logs-dir", logs, "--backend", "scripted:model.json"], workspace
    )
    try:
        wait_for(lambda: (workspace / "reached").exists(), "the slow node to start", 60)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        finish(proc)
    return only_run_dir(workspace / "runs")


def _listing(workspace: Path) -> dict[str, Any]:
    result = invoke(["runs", "--root", str(workspace / "runs"), "--json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)
    return dict(run)


def _status(run_dir: Path) -> dict[str, Any]:
    result = invoke(["status", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_every_attempt_counts_through_retries_a_crash_and_a_resume(workspace: Path) -> None:
    run_dir = _crash_in_slow(workspace)
    spent = A_ATTEMPTS
    tokens = sum(i + o for i, o in spent)
    # The crashed run: the listings show what it spent before the kill.
    assert _listing(workspace)["status"] == "stopped"
    assert _listing(workspace)["tokens"] == tokens
    assert _listing(workspace)["cost"] == pytest.approx(_cost(spent))
    assert _status(run_dir)["tokens"] == tokens

    _script(workspace, B_ATTEMPTS)
    result = invoke(["resume", str(run_dir)])
    assert result.exit_code == 0, result.output
    spent = A_ATTEMPTS + B_ATTEMPTS
    tokens_in, tokens_out = sum(i for i, _ in spent), sum(o for _, o in spent)
    cost = _cost(spent)
    assert f"tokens: {tokens_in:,} in / {tokens_out:,} out; cost: ${cost:,.4f}" in result.stdout
    manifest = read_json(run_dir / "manifest.json")["usage"]
    assert (manifest["input_tokens"], manifest["output_tokens"]) == (tokens_in, tokens_out)
    assert manifest["cost"] == pytest.approx(cost)
    listing = _listing(workspace)
    assert (listing["tokens"], listing["cost"]) == (tokens_in + tokens_out, pytest.approx(cost))
    assert _status(run_dir)["tokens"] == tokens_in + tokens_out
    text = invoke(["status", str(run_dir)]).stdout
    assert (
        f"tokens: {tokens_in + tokens_out:,} ({tokens_in:,} in, 0 cached, {tokens_out:,} out; "
        f"every attempt), cost ${cost:,.4f}"
    ) in text
    # The summary rows hold every attempt of each visit: a's row is a's three attempts.
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    by_node = {row["node"]: row for row in rows}
    assert by_node["a"]["attempts"] == 3
    assert by_node["a"]["usage"]["input_tokens"] == sum(i for i, _ in A_ATTEMPTS)
    assert by_node["b"]["usage"]["output_tokens"] == sum(o for _, o in B_ATTEMPTS)

    # Going back to b: what was spent stays spent, and b's new attempts add to it.
    _script(workspace, B_ATTEMPTS)
    result = invoke(["resume", str(run_dir), "--from", "b"])
    assert result.exit_code == 0, result.output
    spent = A_ATTEMPTS + B_ATTEMPTS + B_ATTEMPTS
    manifest = read_json(run_dir / "manifest.json")["usage"]
    assert manifest["input_tokens"] == sum(i for i, _ in spent)
    assert manifest["cost"] == pytest.approx(_cost(spent))


def test_a_resumed_run_budget_remembers_every_attempt(workspace: Path) -> None:
    run_dir = _crash_in_slow(workspace)
    _script(workspace, B_ATTEMPTS)
    # a's last attempt alone (3,300 tokens) is under the limit; its three (6,600) are over.
    result = invoke(["resume", str(run_dir), "--max-total-tokens", "5000"])
    assert result.exit_code == 1, result.output
    assert "run token budget exhausted: 6,600 of 5,000 tokens" in result.output


def test_the_summary_shows_the_node_a_stop_cut_short(workspace: Path) -> None:
    write(workspace / "attractor.toml", PRICES)
    write(
        workspace / "p.dot",
        "digraph cut { start [shape=Mdiamond]; done [shape=Msquare]\n"
        ' work [prompt="work"]; start -> work -> done }\n',
    )
    # The agent's first answer (700 in / 70 out, $0.14) starts a command that sleeps.
    busy = {
        "text": "",
        "tool_calls": [{"name": "shell", "arguments": {"command": "touch busy; sleep 60"}}],
        "usage": {"input_tokens": 700, "output_tokens": 70},
    }
    write(workspace / "model.json", json.dumps({"responses": [busy], "then": "stop"}))
    logs = "runs/{timestamp}-{graph}"
    args = ["run", "p.dot", "--logs-dir", logs, "--backend", "scripted:model.json"]
    proc = spawn(args, workspace)
    wait_for(lambda: (workspace / "busy").exists(), "the agent's command to start", 60)
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc)
    assert code == 130, out + err
    row = next(line for line in out.splitlines() if line.startswith("work "))
    assert row.split()[1:3] == ["stopped", "1"], row
    assert "interrupted while running" in row
    assert "700 in / 70 out" in row and "$0.1400" in row
    assert "tokens: 700 in / 70 out; cost: $0.1400" in out
    # Not a finished row: results.jsonl has none for it, and resume runs it again.
    run_dir = only_run_dir(workspace / "runs")
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [r["node"] for r in rows] == ["start"]


def _manifest_tokens(run_dir: Path) -> tuple[int, int, float]:
    usage = read_json(run_dir / "manifest.json")["usage"]
    return usage["input_tokens"], usage["output_tokens"], usage.get("cost", 0.0)


def test_a_child_runs_retried_attempts_count_in_both_runs(workspace: Path) -> None:
    write(workspace / "attractor.toml", PRICES)
    write(
        workspace / "child.dot",
        "digraph child { start [shape=Mdiamond]; exit [shape=Msquare]\n"
        ' c [prompt="work", max_retries=1]; start -> c -> exit }\n',
    )
    write(
        workspace / "parent.dot",
        "digraph parent { start [shape=Mdiamond]; exit [shape=Msquare]\n"
        ' manage [shape=house, stack.child_dotfile="child.dot", manager.poll_interval="100ms"]\n'
        " start -> manage -> exit }\n",
    )
    _script(workspace, B_ATTEMPTS)  # c fails once, then succeeds
    logs = "runs/{timestamp}-{graph}"
    args = ["run", "parent.dot", "--logs-dir", logs, "--backend", "scripted:model.json"]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    expected = (900, 90, pytest.approx(_cost(B_ATTEMPTS)))
    run_dir = only_run_dir(workspace / "runs")
    assert _manifest_tokens(run_dir / "children" / "manage") == expected
    assert _manifest_tokens(run_dir) == expected
    assert "tokens: 900 in / 90 out; cost: $0.1800" in result.stdout


def test_retried_attempts_in_parallel_branches_count(workspace: Path) -> None:
    write(workspace / "attractor.toml", PRICES)
    branches = "\n".join(
        f' {b} [prompt="branch", max_retries=1]; fan -> {b} -> join' for b in ("b1", "b2")
    )
    write(
        workspace / "p.dot",
        "digraph fan { start [shape=Mdiamond]; done [shape=Msquare]\n"
        " fan [shape=component]; join [shape=tripleoctagon]\n"
        f"{branches}\n start -> fan; join -> done }}\n",
    )
    # Every answer reports a failure: each branch makes two attempts.
    failing = {"responses": [_report("fail", (1000, 100))], "then": "repeat_last"}
    write(workspace / "model.json", json.dumps(failing))
    logs = "runs/{timestamp}-{graph}"
    invoke(["run", "p.dot", "--logs-dir", logs, "--backend", "scripted:model.json"])
    run_dir = only_run_dir(workspace / "runs")
    assert _manifest_tokens(run_dir) == (4000, 400, pytest.approx(4 * _cost([(1000, 100)])))


def test_a_finished_branch_spend_survives_a_crash_inside_its_parallel_node(
    workspace: Path,
) -> None:
    write(workspace / "attractor.toml", PRICES)
    write(
        workspace / "p.dot",
        "digraph fan { start [shape=Mdiamond]; done [shape=Msquare]\n"
        " fan [shape=component]; join [shape=tripleoctagon]\n"
        ' b1 [prompt="branch"]\n'
        ' b2 [shape=parallelogram, tool_command="test -f held && exit 0; touch held; sleep 60"]\n'
        " start -> fan; fan -> b1 -> join; fan -> b2 -> join; join -> done }\n",
    )
    _script(workspace, [(1000, 100)])
    logs = "runs/{timestamp}-{graph}"
    proc = spawn(
        ["run", "p.dot", "--logs-dir", logs, "--backend", "scripted:model.json"], workspace
    )
    run_dir: list[Path] = []

    def b1_done_b2_held() -> bool:
        if not run_dir:
            found = list((workspace / "runs").glob("*")) if (workspace / "runs").is_dir() else []
            run_dir.extend(found[:1])
        if not run_dir or not (workspace / "held").exists():
            return False
        # b1's branch is kept as finished: a resume does not run it again.
        for saved in (run_dir[0] / "fan" / "branches").glob("*.json"):
            with contextlib.suppress(OSError, ValueError, KeyError):
                if json.loads(saved.read_text())["id"] == "b1":
                    return True
        return False

    try:
        wait_for(b1_done_b2_held, "b1 to finish while b2 sleeps", 60)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        finish(proc)
    _script(workspace, [(5, 5)])  # a resume that asked the model again would show it
    result = invoke(["resume", str(run_dir[0])])
    assert result.exit_code == 0, result.output
    assert _manifest_tokens(run_dir[0]) == (1000, 100, pytest.approx(_cost([(1000, 100)])))


def test_a_loop_restart_run_reports_every_directory_spend(workspace: Path) -> None:
    write(workspace / "attractor.toml", PRICES)
    write(
        workspace / "p.dot",
        "digraph again { start [shape=Mdiamond]; done [shape=Msquare]\n"
        ' prep [shape=parallelogram, tool_command="echo prep"]\n'
        ' w [prompt="work", max_retries=0]; start -> prep -> w\n'
        ' w -> prep [condition="outcome=fail", loop_restart=true]\n'
        ' w -> done [condition="outcome=success"] }\n',
    )
    _script(workspace, B_ATTEMPTS)  # w fails (restart), then succeeds
    logs = "runs/{timestamp}-{graph}"
    result = invoke(["run", "p.dot", "--logs-dir", logs, "--backend", "scripted:model.json"])
    assert result.exit_code == 0, result.output
    first, second = sorted((workspace / "runs").iterdir())
    assert _manifest_tokens(first) == (400, 40, pytest.approx(_cost(B_ATTEMPTS[:1])))
    assert _manifest_tokens(second) == (500, 50, pytest.approx(_cost(B_ATTEMPTS[1:])))
    assert "tokens: 900 in / 90 out; cost: $0.1800" in result.stdout
