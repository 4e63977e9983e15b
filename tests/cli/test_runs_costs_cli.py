"""What runs spent, in ``attractor runs`` and ``attractor status``, equal to the manifest's."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runkit import finish, invoke, only_run_dir, read_json, spawn, wait_for, write

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
