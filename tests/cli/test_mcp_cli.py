"""MCP servers through the real CLI: config, lint, --dry-run, a run, its timeout.

The server is the SDK-built test server (tests/agent/mcp_servers), run under
the step's environment and (when bubblewrap works here) its sandbox; the model
is the scripted backend, which calls the server's tools.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from attractor.proc.sandbox_env import sandbox_problem
from tests.cli.runkit import (
    finish,
    invoke,
    kill_all,
    marker,
    pids_with,
    spawn,
    wait_for,
    write,
)

SERVER = Path(__file__).parents[1] / "agent" / "mcp_servers" / "tools_server.py"

PIPELINE = """digraph p {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work  [prompt="look up the issue", mcp="tracker", max_turns=4]
    start -> work -> exit
}
"""


def config(workspace: Path, word: str, linger: bool = False, **extra: str) -> None:
    env = 'SECRET_FOR_SERVER = "${TRACKER_TOKEN}"' + (', MCP_LINGER = "1"' if linger else "")
    lines = [
        "[mcp_servers.tracker]",
        f'command = "{sys.executable}"',
        f'args = ["{SERVER}", "stdio", "{word}"]',
        f"env = {{ {env} }}",
        *(f"{key} = {value}" for key, value in extra.items()),
    ]
    write(workspace / "attractor.toml", "\n".join(lines) + "\n")


def script(workspace: Path, *calls: tuple[str, dict[str, object]]) -> Path:
    responses = [{"text": "", "tool_calls": [{"name": n, "arguments": a}]} for n, a in calls]
    return write(
        workspace / "script.json",
        json.dumps({"responses": [*responses, {"text": "done"}], "then": "stop"}),
    )


def test_a_run_calls_the_servers_tools_and_leaves_no_server_behind(workspace: Path) -> None:
    word = marker()
    config(workspace, word)
    write(workspace / "p.dot", PIPELINE)
    answer = script(
        workspace,
        ("mcp__tracker__echo", {"text": "ISSUE-7"}),
        ("mcp__tracker__env", {"name": "SECRET_FOR_SERVER"}),
    )
    proc = spawn(
        ["run", "p.dot", "--backend", f"scripted:{answer}", "--logs-dir", "logs"],
        workspace,
        {"TRACKER_TOKEN": "tok-4f9a8b7c6d5e"},
    )
    try:
        code, out, err = finish(proc, timeout=120)
        assert code == 0, out + err
        stage = workspace / "logs" / "work"
        tools_log = (stage / "tools.log").read_text()
        assert "--- turn 1: mcp__tracker__echo" in tools_log and "echo: ISSUE-7" in tools_log
        # The server got the variable its config named; what the run wrote has it redacted.
        assert "--- turn 2: mcp__tracker__env" in tools_log
        assert "tok-4f9a8b7c6d5e" not in tools_log and "[redacted:" in tools_log
        wait_for(lambda: not pids_with(word), "the MCP server to be gone", timeout=15)
    finally:
        kill_all(word)


def test_a_stdio_server_runs_inside_the_nodes_sandbox(workspace: Path) -> None:
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(f"the bwrap sandbox does not work here: {problem}")
    word = marker()
    config(workspace, word)
    write(workspace / "p.dot", PIPELINE)
    outside = workspace.parent / f"{word}.txt"
    answer = script(
        workspace,
        ("mcp__tracker__write", {"path": str(workspace / "inside.txt")}),
        ("mcp__tracker__write", {"path": str(outside)}),
    )
    args = ["run", "p.dot", "--backend", f"scripted:{answer}", "--logs-dir", "logs"]
    proc = spawn([*args, "--sandbox", "bwrap"], workspace, {"TRACKER_TOKEN": "x"})
    try:
        code, out, err = finish(proc, timeout=120)
        assert code == 0, out + err
        assert (workspace / "inside.txt").read_text() == "written by the MCP server\n"
        assert not outside.exists()  # the sandbox kept the write from the host
    finally:
        kill_all(word)
        outside.unlink(missing_ok=True)


# Slow: the run must reach the stalled call before its 12s --timeout, even on a loaded machine.
@pytest.mark.slow
def test_the_runs_timeout_stops_a_server_stuck_in_a_call(workspace: Path) -> None:
    word = marker()
    config(workspace, word, call_timeout='"10m"')
    write(workspace / "p.dot", PIPELINE)
    answer = script(workspace, ("mcp__tracker__stall", {}))
    proc = spawn(
        [
            "run",
            "p.dot",
            "--backend",
            f"scripted:{answer}",
            "--logs-dir",
            "logs",
            "--timeout",
            "12s",
        ],
        workspace,
        {"TRACKER_TOKEN": "x"},
    )
    try:
        wait_for(lambda: bool(pids_with(word)), "the MCP server to start", timeout=60)
        code, out, err = finish(proc, timeout=90)
        assert code != 0
        assert "pipeline timed out after 12s while running work" in err
        wait_for(lambda: not pids_with(word), "the MCP server to be stopped", timeout=15)
    finally:
        kill_all(word)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "engine-killed"])
def test_ctrl_c_or_a_killed_engine_stops_the_server(workspace: Path, sig: signal.Signals) -> None:
    """Ctrl-C stops the step and its server; if the engine is killed, the crash guard does
    (the server outlives its client here: only the guard can stop it)."""
    word = marker()
    config(workspace, word, linger=True, call_timeout='"10m"')
    write(workspace / "p.dot", PIPELINE)
    answer = script(workspace, ("mcp__tracker__stall", {}))
    args = ["run", "p.dot", "--backend", f"scripted:{answer}", "--logs-dir", "logs"]
    # Unsandboxed: bwrap's --die-with-parent would stop a sandboxed server by itself.
    proc = spawn([*args, "--sandbox", "none"], workspace, {"TRACKER_TOKEN": "x"})
    try:
        wait_for(lambda: bool(pids_with(word)), "the MCP server to start", timeout=60)
        stall = workspace / "logs" / "work" / "transcript.jsonl"
        wait_for(lambda: "mcp__tracker__stall" in _text(stall), "the stalled call", timeout=60)
        proc.send_signal(sig)
        code, _, _ = finish(proc, timeout=60)
        assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL)
        wait_for(lambda: not pids_with(word), "the MCP server to be stopped", timeout=20)
    finally:
        kill_all(word)


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def test_a_server_name_the_config_does_not_define_stops_the_run_with_file_and_line(
    workspace: Path,
) -> None:
    write(workspace / "attractor.toml", '[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp"\n')
    write(workspace / "p.dot", PIPELINE)
    answer = script(workspace)
    result = invoke(["run", "p.dot", "--backend", f"scripted:{answer}", "--logs-dir", "logs"])
    assert result.exit_code == 2
    assert "p.dot:4: node work names MCP server 'tracker', which attractor.toml" in result.stderr
    assert "(defined: docs)" in result.stderr and "Traceback" not in result.stderr
    assert not (workspace / "logs").exists()


def test_a_server_program_not_on_path_stops_the_run_before_it_starts(workspace: Path) -> None:
    write(workspace / "attractor.toml", '[mcp_servers.tracker]\ncommand = "no-such-mcp-server"\n')
    write(workspace / "p.dot", PIPELINE)
    answer = script(workspace)
    result = invoke(["run", "p.dot", "--backend", f"scripted:{answer}", "--logs-dir", "logs"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "p.dot:4: node work: MCP server 'tracker' runs 'no-such-mcp-server', which is not on "
        "PATH; install it or fix command in attractor.toml: mcp_servers.tracker"
    )
    assert not (workspace / "logs").exists()


def test_lint_checks_server_names_against_the_config_and_the_allow_list(
    workspace: Path,
) -> None:
    write(workspace / "attractor.toml", '[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp"\n')
    write(
        workspace / "p.dot",
        PIPELINE.replace('mcp="tracker"', 'mcp="tracker", mcp_allow="mcp__docs__search"'),
    )
    result = invoke(["lint", "--format", "json", "p.dot"])
    assert result.exit_code == 1
    found = {(d["rule"], d["line"], d["message"]) for d in json.loads(result.stdout)}
    assert (
        "mcp",
        4,
        "MCP server 'tracker' (on work) is not defined in attractor.toml (defined: docs)",
    ) in found
    assert any(rule == "mcp" and "docs is not one of its MCP servers" in m for rule, _, m in found)


def test_lint_reports_a_malformed_allow_entry(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE.replace('mcp="tracker"', 'mcp_deny="garbage"'))
    result = invoke(["lint", "p.dot"])
    assert result.exit_code == 1
    assert "p.dot:4:" in result.stdout and "is not an MCP tool pattern" in result.stdout
    assert (
        "fix: write mcp_deny as entries mcp__SERVER__TOOL (TOOL may use * and ?), "
        "e.g. mcp__tracker__get_*"
    ) in result.stdout


def test_lint_reports_each_broken_server_table_at_its_line_in_the_config(
    workspace: Path,
) -> None:
    write(
        workspace / "attractor.toml",
        '[mcp_servers.tracker]\nurl = "ftp://x"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
        'colour = 1\n\n[mcp_servers.fine]\ncommand = "ok"\n',
    )
    write(workspace / "p.dot", PIPELINE)
    result = invoke(["lint", "p.dot"])
    assert result.exit_code == 1, result.stdout
    assert (
        "attractor.toml:2:1: error mcp: mcp_servers.tracker: url must start with http:// or "
        "https://\n    fix: correct [mcp_servers.tracker] in attractor.toml"
    ) in result.stdout
    assert "attractor.toml:6:1: error mcp: mcp_servers.docs: unknown key 'colour'" in result.stdout
    assert "no problems found" not in result.stdout and "2 error(s)" in result.stdout
    # The run stops on the same table, in one line.
    run = invoke(["run", "p.dot", "--dry-run"])
    assert run.exit_code == 2 and "mcp_servers.tracker: url must start with" in run.stderr


def test_lint_reports_a_server_table_of_pyproject_and_an_unreadable_config(
    workspace: Path,
) -> None:
    write(
        workspace / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.attractor.mcp_servers.tracker]\ncommand = ""\n',
    )
    write(workspace / "p.dot", PIPELINE)
    found = json.loads(invoke(["lint", "--format", "json", "p.dot"]).stdout)
    assert [(d["file"], d["line"], d["message"]) for d in found] == [
        ("pyproject.toml", 5, "mcp_servers.tracker: command must be a non-empty string")
    ]
    write(workspace / "attractor.toml", "[mcp_servers.tracker\n")
    result = invoke(["lint", "p.dot"])
    assert result.exit_code == 1 and "Traceback" not in result.stdout + result.stderr
    assert "attractor.toml: error mcp: the config file cannot be read" in result.stdout


def test_dry_run_lists_each_nodes_servers(workspace: Path) -> None:
    config(workspace, "unused")
    write(
        workspace / "p.dot",
        PIPELINE.replace('mcp="tracker"', 'mcp="tracker", mcp_deny="mcp__tracker__env"'),
    )
    result = invoke(["run", "p.dot", "--dry-run", "--backend", "llm", "--model", "gpt-5"])
    assert result.exit_code == 0, result.stderr
    assert (
        f"mcp servers: tracker (stdio: {sys.executable} {SERVER} stdio unused); "
        "deny mcp__tracker__env; started with each attempt of the node"
    ) in result.stdout


def test_a_bad_server_table_is_a_one_line_error(workspace: Path) -> None:
    write(workspace / "attractor.toml", '[mcp_servers.tracker]\ncommand = "x"\nurl = "http://a"\n')
    write(workspace / "p.dot", PIPELINE)
    result = invoke(["run", "p.dot", "--dry-run"])
    assert result.exit_code == 2
    assert "attractor.toml: mcp_servers.tracker: give either command" in result.stderr


def test_the_help_of_attractor_mcp_names_the_tools_it_serves() -> None:
    from attractor.server.mcp_server import TOOLS

    text = " ".join(invoke(["mcp", "--help"]).stdout.split())
    said = text.split("Tools: ")[1].split(".")[0]
    assert said.split(", ") == list(TOOLS)
    summary = text.split("Serve attractor's tools (")[1].split(")")[0]
    assert all(name in TOOLS for name in summary.removesuffix(", ...").split(", "))
