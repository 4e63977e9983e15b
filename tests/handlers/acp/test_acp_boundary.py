"""The agent's process keeps to the node's boundary: env policy, the config's
``env``, the sandbox; and the library API runs an ACP node like the CLI does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import attractor.api
from tests.cli.runkit import invoke, read_json, write
from tests.handlers.acp.acpkit import configure, graph, seen
from tests.sandbox.conftest import needs_bwrap


def test_the_agent_sees_the_filtered_environment_and_its_own_env(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = configure(workspace, [[{"do": "env", "names": ["SOME_API_KEY", "MY_KEY", "FIXED"]}]])
    with (workspace / "attractor.toml").open("a") as fh:
        fh.write('env = { MY_KEY = "$SOME_API_KEY", FIXED = "plain" }\n')
    write(workspace / "p.dot", graph())
    result = invoke(["run", "p.dot", "--sandbox", "none"], {"SOME_API_KEY": "sk-123"})
    assert result.exit_code == 0, result.output + result.stderr
    env = seen(log, "env")[0]["env"]
    assert env == {"SOME_API_KEY": None, "MY_KEY": "sk-123", "FIXED": "plain"}


@needs_bwrap
def test_in_the_sandbox_the_agent_writes_only_in_the_workspace(workspace: Path) -> None:
    outside = workspace.parent / "outside.txt"
    inside = workspace / "inside.txt"
    turns = [
        [
            {"do": "touch", "path": str(inside)},
            {"do": "touch", "path": str(outside)},
            {"do": "run", "command": "sh", "args": ["-c", f"echo x > {outside}"]},
            {"do": "end"},
        ]
    ]
    log = configure(workspace, turns, folder=workspace)
    write(workspace / "p.dot", graph(acp_permissions="allow_all"))
    result = invoke(["run", "p.dot", "--logs-dir", "logs", "--sandbox", "bwrap"], {})
    assert result.exit_code == 0, result.output + result.stderr
    assert inside.read_text() == "agent was here\n"
    # Outside the workspace the agent and its commands write nowhere the host sees
    # (refused, or into the sandbox's own /tmp).
    assert not outside.exists()
    assert seen(log, "touched")[0]["ok"] is True
    assert seen(log, "ran")


def test_the_agent_cannot_write_through_a_hard_link_to_a_file_outside(
    workspace: Path,
) -> None:
    # A path check cannot tell a hard link from the file: the write once changed the
    # outside file through it. It is refused as the built-in write tool refuses it.
    outside = write(workspace.parent / "outside.txt", "mine\n")
    os.link(outside, workspace / "linked.txt")
    turns = [
        [
            {"do": "write", "path": "linked.txt", "content": "the agent's\n"},
            {"do": "write", "path": "new/made.txt", "content": "made\n"},
            {"do": "end"},
        ]
    ]
    log = configure(workspace, turns)
    write(workspace / "p.dot", graph())
    result = invoke(["run", "p.dot", "--logs-dir", "logs", "--sandbox", "none"], {})
    assert result.exit_code == 0, result.output + result.stderr
    assert outside.read_text() == "mine\n"
    [error] = seen(log, "error")
    assert "linked.txt is a hard link" in error["data"]["reason"]
    assert (workspace / "new" / "made.txt").read_text() == "made\n"


@pytest.mark.anyio
async def test_the_library_api_runs_an_acp_node(workspace: Path) -> None:
    log = configure(workspace, [[{"do": "say", "text": "Done through the API."}, {"do": "end"}]])
    write(workspace / "p.dot", graph())
    result = await attractor.api.run("p.dot", flags={"sandbox": "none", "logs_dir": "logs"})
    assert result.status == "success"
    assert seen(log, "prompt")
    status = read_json(workspace / "logs" / "work" / "status.json")
    assert status["outcome"] == "success"
    assert (workspace / "logs" / "work" / "response.md").read_text() == "Done through the API."


def test_secrets_in_what_the_agent_wrote_itself_are_scrubbed(workspace: Path) -> None:
    secret = "sk-acp-secret-4711"
    echo = ["-c", "echo $K; echo $K >&2"]
    run = {"do": "run", "command": "sh", "args": echo, "env": {"K": secret}}
    log = configure(workspace, [[run, {"do": "end"}]])
    write(workspace / "p.dot", graph(acp_permissions="allow_all"))
    args = ["run", "p.dot", "--logs-dir", "logs", "--sandbox", "none"]
    result = invoke(args, {"MY_API_KEY": secret})
    assert result.exit_code == 0, result.output + result.stderr
    assert seen(log, "ran")[0]["output"] == f"{secret}\n{secret}\n"  # the agent got it all
    stage = workspace / "logs" / "work"
    written = [p for p in stage.rglob("*") if p.is_file()]
    assert stage / "acp_terminals" / "term-1.log" in written
    assert not [p for p in written if secret in p.read_text(errors="replace")]


@needs_bwrap
def test_a_link_put_in_place_of_the_terminals_folder_is_not_written_through(
    workspace: Path,
) -> None:
    # A terminal's command (in the sandbox, its stage folder writable) swaps the
    # folder of the terminals' logs for a link to a place outside: attractor, out of
    # the sandbox, once wrote the next terminal's log there.
    outside = workspace.parent / "outside-logs"
    outside.mkdir()
    folder = workspace / "logs" / "work" / "acp_terminals"
    swap = f"rm -rf {folder} && ln -s {outside} {folder}"
    turns = [
        [
            {"do": "run", "command": "sh", "args": ["-c", swap]},
            {"do": "run", "command": "sh", "args": ["-c", "echo second"]},
            {"do": "end"},
        ]
    ]
    log = configure(workspace, turns, folder=workspace)
    write(workspace / "p.dot", graph(acp_permissions="allow_all"))
    result = invoke(["run", "p.dot", "--logs-dir", "logs", "--sandbox", "bwrap"], {})
    assert result.exit_code == 0, result.output + result.stderr
    assert list(outside.iterdir()) == []
    assert [e["output"] for e in seen(log, "ran")][1] == "second\n"
    assert (workspace / "logs" / "work" / "acp_terminals").is_dir()
