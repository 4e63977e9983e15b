"""A full-fidelity conversation survives kill -9 and resume, through real processes."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import finish, kill_all, only_run_dir, sleep_mark, spawn, wait_for, write

PIPELINE = """\
digraph threads {
    default_fidelity="full"
    start     [shape=Mdiamond]
    exit      [shape=Msquare]
    plan      [prompt="Plan the change", thread_id="main"]
    implement [prompt="Implement the plan", thread_id="main"]
    start -> plan -> implement -> exit
}
"""


@pytest.fixture
def mark() -> Iterator[str]:
    with sleep_mark(31) as word:
        yield word


def _script(path: Path, *responses: dict[str, object]) -> str:
    write(path, json.dumps({"responses": list(responses), "then": "stop"}))
    return f"scripted:{path}"


def test_a_full_thread_continues_after_kill_9_and_resume(workspace: Path, mark: str) -> None:
    write(workspace / "threads.dot", PIPELINE)
    hold = f"touch holding && sleep {mark}"
    first = _script(
        workspace / "first.json",
        {"text": "PLAN: change a.txt"},
        {"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": hold}}]},
    )
    args = ["run", "threads.dot", "--logs-dir", "runs/{timestamp}-{graph}", "--backend", first]
    proc = spawn(args, workspace)
    wait_for(lambda: (workspace / "holding").exists(), "implement to start its command")
    os.kill(proc.pid, signal.SIGKILL)
    finish(proc)
    kill_all(mark)
    run_dir = only_run_dir(workspace / "runs")

    second = _script(workspace / "second.json", {"text": "IMPLEMENTED"})
    code, out, err = finish(spawn(["resume", str(run_dir), "--backend", second], workspace))
    assert code == 0, err

    status = json.loads((run_dir / "implement" / "status.json").read_text())
    carried = status["context_carried"]
    assert carried["thread"] == "main" and carried["history_messages"] == 2
    saved = json.loads((run_dir / carried["thread_file"]).read_text())
    # plan's turn, then implement's: the killed attempt's shell call is not in it.
    assert [(m["role"], m["content"]) for m in saved] == [
        ("user", "Plan the change"),
        ("assistant", "PLAN: change a.txt"),
        ("user", "Implement the plan"),
        ("assistant", "IMPLEMENTED"),
    ]
