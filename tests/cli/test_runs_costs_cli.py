"""What runs spent, in ``attractor runs`` and ``attractor status``, equal to the manifest's."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runkit import (
    events,
    finish,
    invoke,
    only_run_dir,
    read_json,
    spawn,
    wait_for,
    write,
)
from tests.server.serverkit import SPENDING_SCRIPT, SPENDS

#: Dollars per million tokens: input, output, cached input (cheaper).
PRICES = "[prices.scripted]\ninput = 100.0\noutput = 1000.0\ncache_read = 10.0\n"
PIPELINE = """digraph spend {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    plan  [prompt="plan", max_retries=1]
    work  [prompt="work"]
    start -> plan -> work -> done
}
"""


def _turn(usage: tuple[int, int, int], call: dict[str, Any]) -> dict[str, Any]:
    tokens = dict(zip(("input_tokens", "output_tokens", "cache_read_tokens"), usage, strict=True))
    return {"text": "", "tool_calls": [call], "usage": tokens}


def _report(outcome: str, usage: tuple[int, int, int]) -> dict[str, Any]:
    return _turn(usage, {"name": "report_outcome", "arguments": {"outcome": outcome}})


def _cells(usage: dict[str, Any]) -> list[str]:
    """The IN, OUT, CACHED and COST cells of a usage object as the tables print them."""
    return [
        f"{usage['input_tokens']:,}",
        f"{usage['output_tokens']:,}",
        f"{usage['cache_read_tokens']:,}",
        f"${usage['cost']:,.4f}",
    ]


def _row(text: str, first: str) -> list[str]:
    return next(line.split() for line in text.splitlines() if line.split()[:1] == [first])


def test_runs_and_status_show_tokens_and_cost_equal_to_the_manifest(workspace: Path) -> None:
    write(workspace / "attractor.toml", PRICES)
    write(workspace / "p.dot", PIPELINE)
    replies = [
        _report("fail", (1000, 100, 400)),  # plan, attempt 1
        _report("success", (2000, 200, 1500)),  # plan, attempt 2
        _report("success", (3000, 300, 0)),  # work
    ]
    write(workspace / "model.json", json.dumps({"responses": replies, "then": "stop"}))
    args = ["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}"]
    assert invoke([*args, "--backend", "scripted:model.json"]).exit_code == 0
    run_dir = only_run_dir(workspace / "runs")
    usage = read_json(run_dir / "manifest.json")["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cache_read_tokens"]) == (
        6000,
        600,
        1900,
    )

    listing = invoke(["runs", "--root", "runs"]).stdout
    assert _row(listing, run_dir.name)[-4:] == _cells(usage)

    text = invoke(["status", str(run_dir)]).stdout
    totals = "tokens: 6,600 (6,000 in, 1,900 cached, 600 out; every attempt)"
    assert f"{totals}, cost ${usage['cost']:,.4f}" in text
    stages = text.split("spent by stage (every attempt of each visit):\n")[1]
    plan, work, run = (_row(stages, name) for name in ("plan", "work", "run"))
    assert plan[:3] == ["plan", "1", "2"] and work[:3] == ["work", "1", "1"]
    assert plan[3:6] == ["3,000", "300", "1,900"] and work[3:6] == ["3,000", "300", "0"]
    assert run[1:] == _cells(usage)
    assert "(unfinished)" not in stages

    data = json.loads(invoke(["status", str(run_dir), "--json"]).stdout)
    spent = [s["spend"] for s in data["stages"]]
    assert sum(s["input_tokens"] for s in spent) == usage["input_tokens"]
    assert sum(s["cost"] for s in spent) == pytest.approx(usage["cost"])
    assert data["usage"]["cost"] == pytest.approx(usage["cost"])


def test_status_names_what_a_stage_cut_short_spent(workspace: Path) -> None:
    write(workspace / "attractor.toml", PRICES)
    write(workspace / "p.dot", PIPELINE.replace(", max_retries=1", ""))
    busy = {"name": "shell", "arguments": {"command": "touch busy; sleep 60"}}
    replies = [_report("success", (1000, 100, 0)), _turn((700, 70, 200), busy)]
    write(workspace / "model.json", json.dumps({"responses": replies, "then": "stop"}))
    args = ["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}"]
    proc = spawn([*args, "--backend", "scripted:model.json"], workspace)
    wait_for(lambda: (workspace / "busy").exists(), "work's command to start", 60)
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc)
    assert code == 130, out + err
    run_dir = only_run_dir(workspace / "runs")
    usage = read_json(run_dir / "manifest.json")["usage"]
    stages = invoke(["status", str(run_dir)]).stdout.split("spent by stage")[1]
    assert _row(stages, "plan")[3:6] == ["1,000", "100", "0"]
    assert _row(stages, "(unfinished)")[1:4] == ["700", "70", "200"]
    assert _row(stages, "run")[1:] == _cells(usage)


QUICK = """digraph {name} {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    step  [shape=parallelogram, tool_command="{command}"]
    start -> step -> done
}}
"""


def test_runs_are_filtered_by_status_and_pipeline(workspace: Path) -> None:
    for name, command, logs in (
        ("nightly_a", "true", "runs/one"),
        ("nightly_b", "exit 3", "runs/two"),
        ("release", "exit 3", "runs/three"),
    ):
        write(workspace / f"{name}.dot", QUICK.format(name=name, command=command))
        invoke(["run", f"{name}.dot", "--logs-dir", logs])

    def ids(*args: str) -> list[str]:
        result = invoke(["runs", "--root", "runs", "--json", *args])
        assert result.exit_code == 0, result.output
        return sorted(r["id"] for r in json.loads(result.stdout))

    assert ids() == ["one", "three", "two"]
    assert ids("--status", "fail") == ["three", "two"]
    assert ids("--status", "fail", "--pipeline", "nightly_*") == ["two"]
    assert ids("--status", "success,fail", "--pipeline", "release") == ["three"]
    assert ids("--status", "success", "--status", "running") == ["one"]
    empty = invoke(["runs", "--root", "runs", "--status", "timed_out"])
    assert empty.stdout == "no runs matching the filters under runs\n"
    wrong = invoke(["runs", "--root", "runs", "--status", "failed"])
    assert wrong.exit_code == 2
    assert wrong.stderr.startswith("error: --status failed: no run has that status; use one of ")
    assert wrong.stderr.count("\n") == 1


def test_status_shows_each_branch_each_request_and_the_budgets_the_run_was_given(
    workspace: Path,
) -> None:
    write(workspace / "attractor.toml", PRICES)
    write(workspace / "spends.dot", SPENDS)
    write(workspace / "model.json", json.dumps(SPENDING_SCRIPT))
    args = ["run", "spends.dot", "--logs-dir", "runs/one", "--backend", "scripted:model.json"]
    budget = ["--max-total-tokens", "20000", "--max-cost", "5", "--max-total-turns", "40"]
    assert invoke([*args, *budget, "--timeout", "10m"]).exit_code == 0
    run_dir = workspace / "runs" / "one"
    usage = read_json(run_dir / "manifest.json")["usage"]
    turns = [e for e in events(run_dir) if e["type"] == "agent_turn_completed"]

    text = invoke(["status", str(run_dir)]).stdout

    branches = text.split("spent by branch (its nodes up to the fan-in):\n")[1].split("\n\n")[0]
    assert _row(branches, "fan")[:3] == ["fan", "left", "left"]
    assert _row(branches, "fan")[3:6] == ["300", "30", "0"]
    assert len(branches.splitlines()) == 3  # the header, left, right
    per_request = text.split("spent by request (each model request of an agent node):\n")[1]
    rows = per_request.split("\n\n")[0].splitlines()[1:]
    assert len(rows) == len(turns) == 4  # plan's two turns, left's and right's
    assert rows[0].split()[:6] == ["plan", "1", "1", "work", "1,000", "100"]
    assert sum(int(r.split()[-4].replace(",", "")) for r in rows) == usage["input_tokens"]
    budgets = text.split("budgets:\n")[1].split("\n\n")[0]
    tokens = usage["input_tokens"] + usage["output_tokens"]
    assert _row(budgets, "tokens") == [
        "tokens", f"{tokens:,}", "20,000", f"{tokens / 20000:.0%}"
    ]  # fmt: skip
    assert _row(budgets, "turns")[1:] == ["4", "40", "10%"]
    assert _row(budgets, "cost")[1:3] == [f"${usage['cost']:,.4f}", "$5.0000"]
    assert _row(budgets, "time")[2] == "10m00s"

    data = json.loads(invoke(["status", str(run_dir), "--json"]).stdout)
    assert {"timeline", "stages", "next", "usage", "status"} <= data.keys()  # as before
    assert [(b["branch"], b["nodes"]) for b in data["branches"]] == [
        ("left", ["left"]), ("right", ["right"])
    ]  # fmt: skip
    assert sorted(r["node"] for r in data["requests"]) == ["left", "plan", "plan", "right"]
    limits = {b["name"]: (b["used"], b["limit"]) for b in data["budgets"]}
    assert limits["tokens"] == (tokens, 20000) and limits["turns"] == (4, 40)
    plain = invoke(["status", str(run_dir / ".." / "two")])  # not a run: unchanged, exit 2
    assert plain.exit_code == 2
