"""An ACP agent that exits, hangs, writes garbage or cannot start fails its step
with a reason that says so, and leaves no process behind."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.cli.runkit import finish, invoke, read_json, spawn, wait_for, write
from tests.handlers.acp.acpkit import configure, graph, seen
from tests.proc.prockit import alive

ARGS = ["run", "p.dot", "--logs-dir", "logs", "--sandbox", "none"]


def _status(workspace: Path) -> dict[str, object]:
    status: dict[str, object] = read_json(workspace / "logs" / "work" / "status.json")
    return status


def _gone(log: Path) -> None:
    pids = [e["pid"] for e in seen(log, "pid")] + [e["child_pid"] for e in seen(log, "child_pid")]
    assert pids, "the agent never started"
    # SIGKILL went to the whole group; a killed child may take a moment to vanish.
    wait_for(lambda: not [pid for pid in pids if alive(pid)], "the agent's processes to end", 10)


def test_an_agent_that_exits_mid_turn_fails_the_step(workspace: Path) -> None:
    log = configure(workspace, [[{"do": "say", "text": "working"}, {"do": "exit", "code": 3}]])
    write(workspace / "p.dot", graph())
    result = invoke(ARGS, {})
    assert result.exit_code == 1
    reason = str(_status(workspace)["failure_reason"])
    assert reason.startswith("ACP agent scripted exited with code 3 during the session"), reason
    _gone(log)


def test_an_agent_that_writes_garbage_fails_the_step(workspace: Path) -> None:
    log = configure(workspace, [[{"do": "garbage"}]])
    write(workspace / "p.dot", graph())
    result = invoke(ARGS, {})
    assert result.exit_code == 1
    reason = str(_status(workspace)["failure_reason"])
    assert "wrote something that is not an ACP message to its stdout" in reason
    assert "Loading model weights... done" in reason
    _gone(log)


def test_a_hung_agent_times_out_with_its_children(workspace: Path) -> None:
    log = configure(workspace, [[{"do": "say", "text": "thinking"}, {"do": "hang"}]])
    # Generous: the agent must be up and hanging before the timeout (session/cancel
    # on cancellation is checked without a clock in test_acp_backend.py).
    write(workspace / "p.dot", graph(timeout="5s"))
    result = invoke(ARGS, {})
    assert result.exit_code == 1
    assert _status(workspace)["failure_reason"] == "timed out after 5s"
    _gone(log)


def test_ctrl_c_stops_the_agent_and_resume_runs_the_node_again(workspace: Path) -> None:
    once = workspace.parent / "hung-once"
    turn = [{"do": "hang", "once": str(once)}, {"do": "say", "text": "Finished."}, {"do": "end"}]
    log = configure(workspace, [turn])
    write(workspace / "p.dot", graph())
    proc = spawn(ARGS, workspace, {})
    try:
        wait_for(lambda: bool(seen(log, "child_pid")), "the agent to start its child and hang")
        proc.send_signal(signal.SIGINT)
        returncode, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert returncode == 130, err
    _gone(log)
    resumed = invoke(["resume", "logs"], {})
    assert resumed.exit_code == 0, resumed.output + resumed.stderr
    assert len(seen(log, "pid")) == 2
    assert (workspace / "logs" / "work" / "response.md").read_text() == "Finished."


def test_an_agent_that_cannot_start_fails_the_step(workspace: Path) -> None:
    configure(workspace, [])
    toml = workspace / "attractor.toml"
    text = toml.read_text().replace("args =", 'command = "/nonexistent/agent"\nargs =', 1)
    toml.write_text(text.replace("command = ", "#command = ", 1))
    write(workspace / "p.dot", graph())
    result = invoke(ARGS, {})
    assert result.exit_code == 2
    assert "backend acp:scripted runs '/nonexistent/agent', which is not on PATH" in result.stderr
    assert "p.dot:4:" in result.stderr


def test_an_unknown_agent_is_named_with_its_line(workspace: Path) -> None:
    configure(workspace, [], name="other")
    write(workspace / "p.dot", graph())
    result = invoke(ARGS, {})
    assert result.exit_code == 2
    assert "p.dot:4:" in result.stderr
    assert "backend acp:scripted names no [acp_agents.scripted] in the config" in result.stderr
    assert "(configured: other)" in result.stderr


def test_a_bad_agent_table_is_a_clear_error(workspace: Path) -> None:
    write(workspace / "attractor.toml", '[acp_agents.x]\ncommand = "a"\nargz = []\n')
    write(workspace / "p.dot", graph())
    result = invoke(ARGS, {})
    assert result.exit_code == 2
    assert "attractor.toml: acp_agents.x: unknown key 'argz'" in result.stderr


def test_lint_names_an_unconfigured_agent_with_its_line(workspace: Path) -> None:
    configure(workspace, [], name="other")
    write(workspace / "p.dot", graph(llm_model="gpt-5"))
    result = invoke(["lint", "p.dot"], {})
    assert result.exit_code == 1
    assert (
        "p.dot:4:27: error backend: backend acp:scripted names no [acp_agents.scripted] "
        "in attractor.toml (configured: other)"
    ) in result.output
    assert "llm_model on work is ignored by backend acp:scripted" in result.output
    configure(workspace, [])
    write(workspace / "p.dot", graph())
    assert invoke(["lint", "p.dot"], {}).exit_code == 0


def test_dry_run_names_the_agent_and_starts_nothing(workspace: Path) -> None:
    log = configure(workspace, [])
    write(workspace / "p.dot", graph(acp_permissions="allow_read"))
    result = invoke(["run", "p.dot", "--dry-run", "--sandbox", "none"], {})
    assert result.exit_code == 0, result.output + result.stderr
    assert "agent: acp:scripted: " in result.output
    assert "(from attractor.toml: acp_agents.scripted), acp_permissions=allow_read" in (
        result.output
    )
    assert "boundary: local, no sandbox" in result.output
    assert not seen(log, "pid")


def test_a_terminal_left_running_ends_with_the_node(workspace: Path) -> None:
    line = "echo $$; exec sleep 1000"
    start = {"do": "start", "command": "sh", "args": ["-c", line]}
    log = configure(workspace, [[start, {"do": "say", "text": "left it running"}, {"do": "end"}]])
    write(workspace / "p.dot", graph(acp_permissions="allow_all"))
    result = invoke(ARGS, {})
    assert result.exit_code == 0, result.output + result.stderr
    pid = int(seen(log, "started")[0]["first_line"])
    wait_for(lambda: not alive(pid), "the terminal's command to end", 10)


def test_without_the_sdk_the_run_says_how_to_install_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(workspace, [])
    write(workspace / "p.dot", graph())
    monkeypatch.setitem(sys.modules, "acp", None)  # as if agent-client-protocol were missing
    result = invoke(ARGS, {})
    assert result.exit_code == 2
    assert "backend acp:scripted needs the agent-client-protocol package" in result.stderr
    assert "pip install 'attractor[acp]'" in result.stderr


def test_a_write_to_a_fifo_is_refused_at_once(workspace: Path) -> None:
    # The write would wait for a reader that never comes; the run's process once
    # never exited (a thread it waits for at exit was stuck in it).
    os.mkfifo(workspace / "pipe")
    log = configure(
        workspace, [[{"do": "write", "path": "pipe", "content": "unread"}, {"do": "end"}]]
    )
    write(workspace / "p.dot", graph())
    code, out, err = finish(spawn(ARGS, workspace), timeout=60)
    assert code == 0, out + err
    [error] = seen(log, "error")
    assert "pipe is not a regular file" in error["data"]["reason"]
