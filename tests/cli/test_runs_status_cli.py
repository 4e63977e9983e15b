"""``attractor runs`` and ``attractor status`` on finished, failed, stopped and running runs."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import finish, invoke, sleep_mark, spawn, wait_for, write

PIPELINE = """\
digraph {name} {{
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work  [shape=parallelogram, tool_command="{command}"]
    start -> work -> exit
}}
"""


@pytest.fixture
def mark() -> Iterator[str]:
    with sleep_mark(41) as word:
        yield word


def _start(workspace: Path, name: str, command: str) -> list[str]:
    write(workspace / f"{name}.dot", PIPELINE.format(name=name, command=command))
    return ["run", f"{name}.dot", "--logs-dir", f"runs/{name}"]


def test_runs_and_status_describe_every_kind_of_run(workspace: Path, mark: str) -> None:
    assert invoke(_start(workspace, "ok", "echo fine")).exit_code == 0
    assert invoke(_start(workspace, "broken", "echo oops >&2; exit 3")).exit_code == 1
    stopped = spawn(_start(workspace, "stopped", f"touch held1; sleep {mark}"), workspace)
    wait_for(lambda: (workspace / "held1").exists(), "the first run to hold")
    stopped.send_signal(signal.SIGINT)
    finish(stopped)
    running = spawn(_start(workspace, "busy", f"touch held2; sleep {mark}"), workspace)
    try:
        wait_for(lambda: (workspace / "held2").exists(), "the second run to hold")
        listed = invoke(["runs", "--root", "runs", "--json"])
        assert listed.exit_code == 0, listed.output
        by_id = {r["id"]: r for r in json.loads(listed.stdout)}
        assert {k: v["status"] for k, v in by_id.items()} == {
            "ok": "success",
            "broken": "fail",
            "stopped": "interrupted",
            "busy": "running",
        }
        assert by_id["ok"]["nodes_done"] == 3
        assert by_id["ok"]["started_at_iso"].endswith("Z")
        # Newest first.
        assert list(by_id)[0] == "busy" and list(by_id)[-1] == "ok"
    finally:
        running.send_signal(signal.SIGINT)
        finish(running)

    table = invoke(["runs", "--root", "runs"]).stdout.splitlines()
    assert table[0].split() == [
        "ID",
        "PIPELINE",
        "STATUS",
        "STARTED",
        "(UTC)",
        "DURATION",
        "NODES",
        "IN",
        "OUT",
        "CACHED",
        "COST",
    ]
    assert len(table) == 5

    failed = invoke(["status", "runs/broken"])
    assert failed.exit_code == 0
    assert "reason: work failed: tool_command exited with code 3" in failed.stdout
    work = next(line for line in failed.stdout.splitlines() if line.startswith("work"))
    assert work.split()[:4] == ["work", "1", "1", "fail"]
    assert "next: nothing to resume: the run ended fail" in failed.stdout

    resumable = json.loads(invoke(["status", "runs/stopped", "--json"]).stdout)
    assert [(r["node"], r["status"]) for r in resumable["timeline"]] == [
        ("start", "success"),
        ("work", "stopped"),
    ]
    assert resumable["next"].startswith("attractor resume runs/stopped runs work again")


def test_status_of_a_folder_that_is_no_run_is_a_usage_error(workspace: Path) -> None:
    (workspace / "empty").mkdir()
    result = invoke(["status", "empty"])
    assert result.exit_code == 2
    assert "not a run directory" in result.stderr


def test_resume_latest_picks_the_newest_stopped_run(workspace: Path, mark: str) -> None:
    write(workspace / "p.dot", PIPELINE.format(name="p", command="test -f go || sleep " + mark))
    assert invoke(["run", "p.dot", "--timeout", "1s"]).exit_code == 124
    (workspace / "go").write_text("")
    result = invoke(["resume", "--latest"])
    assert result.exit_code == 0, result.output
    assert "resuming .attractor/runs/" in result.stderr
    assert invoke(["resume", "--latest"]).exit_code == 2  # nothing stopped is left


LOOP = """\
digraph loop {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    a     [shape=parallelogram, tool_command="echo a", max_visits=1]
    check [shape=parallelogram, tool_command="exit 1"]
    start -> a -> check
    check -> exit [condition="outcome=success"]
    check -> a    [condition="outcome=fail"]
}
"""


def test_status_shows_a_visit_refused_by_max_visits_and_a_stopped_attempts_time(
    workspace: Path, mark: str
) -> None:
    write(workspace / "loop.dot", LOOP)
    assert invoke(["run", "loop.dot", "--logs-dir", "runs/loop"]).exit_code == 1
    rows = json.loads(invoke(["status", "runs/loop", "--json"]).stdout)["timeline"]
    assert [(r["node"], r["visit"], r["attempt"], r["status"]) for r in rows] == [
        ("start", 1, 1, "success"),
        ("a", 1, 1, "success"),
        ("check", 1, 1, "fail"),
        ("a", 2, 0, "fail"),  # it failed on entry: no attempt ran, no stage event says so
    ]
    assert rows[2]["route"] == "-> a"
    assert rows[3]["note"] == "entered 2 times, more than max_visits=1"

    args = _start(workspace, "nap", f"sleep {mark}")
    assert invoke([*args, "--timeout", "1s"]).exit_code == 124
    [*_, nap] = json.loads(invoke(["status", "runs/nap", "--json"]).stdout)["timeline"]
    assert nap["status"] == "stopped" and nap["duration"] >= 0.9  # till the run stopped


def test_a_stopped_attempt_ends_where_its_session_did_not_at_the_resume(
    workspace: Path, mark: str
) -> None:
    command = f"[ -f go ] || sleep {mark}; echo resumed"
    args = _start(workspace, "later", command)
    assert invoke([*args, "--timeout", "1s"]).exit_code == 124
    write(workspace / "go", "")
    assert invoke(["resume", "runs/later"]).exit_code == 0
    rows = json.loads(invoke(["status", "runs/later", "--json"]).stdout)["timeline"]
    stopped, again = (r for r in rows if r["node"] == "work")
    assert stopped["status"] == "stopped" and again["status"] == "success"
    assert stopped["started"] + stopped["duration"] <= again["started"]
