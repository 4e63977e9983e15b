"""An agent CLI stops with its node: node timeout, ``--timeout``, Ctrl-C and a
killed engine leave no process behind, and ``attractor resume`` runs the node
again to the end."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.cli.runkit import finish, invoke, read_json, spawn, wait_for, write
from tests.handlers.external.agentkit import agent_env, child_pids, one_node_graph, starts
from tests.proc.prockit import alive


@pytest.fixture(autouse=True)
def no_workspace(workspace: Path) -> None:
    """The fake agents log their processes in the workdir (starts.jsonl), which a
    workspace would put back when the run stops; these tests are about processes
    (what a workspace does on a stop is in tests/workspace)."""
    write(workspace / "attractor.toml", 'workspace = "none"\n')


def _env(fakes: Path, log: Path) -> dict[str, str]:
    return {k: v for k, v in agent_env(fakes, log).items() if v is not None}


def _hung(log: Path) -> None:
    wait_for(lambda: bool(child_pids(log)), "the agent CLI to start its child and hang")


def _gone(log: Path) -> None:
    pids = [s["pid"] for s in starts(log)] + child_pids(log)
    assert pids and not [pid for pid in pids if alive(pid)], "an agent process survived"


@pytest.mark.parametrize("backend", ["claude-code", "codex", "gemini-cli"])
def test_node_timeout_stops_the_cli_and_its_children(
    workspace: Path, fakes: Path, backend: str
) -> None:
    write(workspace / "p.dot", one_node_graph(backend, "SCENARIO=hang", timeout="1s"))
    log = workspace / "starts.jsonl"
    result = invoke(["run", "p.dot", "--logs-dir", "logs"], agent_env(fakes, log))
    assert result.exit_code == 1
    status = read_json(workspace / "logs" / "work" / "status.json")
    assert status["failure_reason"] == "timed out after 1s"
    _gone(log)


@pytest.mark.parametrize(("stop", "code"), [("SIGINT", 130), ("SIGTERM", 143), ("--timeout", 124)])
def test_run_stops_take_the_cli_down_and_resume_finishes_the_node(
    workspace: Path, fakes: Path, stop: str, code: int
) -> None:
    write(workspace / "p.dot", one_node_graph("codex", "SCENARIO=hang"))
    log = workspace / "starts.jsonl"
    args = ["run", "p.dot", "--logs-dir", "logs"]
    if stop == "--timeout":
        args += ["--timeout", "2s"]
    proc = spawn(args, workspace, _env(fakes, log))
    try:
        _hung(log)
        if stop != "--timeout":
            proc.send_signal(getattr(signal, stop))
        returncode, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert returncode == code, err
    assert "while running work; resume with: attractor resume" in err.splitlines()[-1]
    _gone(log)

    resumed = invoke(["resume", "logs"], agent_env(fakes, log))
    assert resumed.exit_code == 0, resumed.output + resumed.stderr
    assert len(starts(log)) == 2
    answer = (workspace / "logs" / "work" / "response.md").read_text()
    assert answer == "The plan is ready: three steps, tests first."


def test_a_killed_engine_leaves_no_agent_behind_and_resume_finishes(
    workspace: Path, fakes: Path
) -> None:
    write(workspace / "p.dot", one_node_graph("claude-code", "SCENARIO=hang"))
    log = workspace / "starts.jsonl"
    proc = spawn(["run", "p.dot", "--logs-dir", "logs"], workspace, _env(fakes, log))
    _hung(log)
    os.kill(proc.pid, signal.SIGKILL)
    finish(proc)
    pids = [s["pid"] for s in starts(log)] + child_pids(log)
    wait_for(lambda: not [p for p in pids if alive(p)], "the guard to stop the agent CLI")

    resumed = invoke(["resume", "logs"], agent_env(fakes, log))
    assert resumed.exit_code == 0, resumed.output + resumed.stderr
    status = read_json(workspace / "logs" / "work" / "status.json")
    assert status["outcome"] == "success"
    assert status["backend"] == "claude-code"
