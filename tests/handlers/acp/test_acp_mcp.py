"""A node's MCP servers reach its ACP agent in ``session/new``: stdio and HTTP
servers with their secrets expanded only inside the protocol message, what ACP
cannot honour refused with one line, and ``--dry-run`` naming them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.runkit import invoke, write
from tests.handlers.acp.acpkit import configure, graph, seen

SERVERS = """
[mcp_servers.tracker]
command = "tracker-mcp"
args = ["--project", "web"]
env = { TRACKER_TOKEN = "${TRACKER_TOKEN}", MODE = "ro" }

[mcp_servers.docs]
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
"""
TRACKER_SECRET = "trk-3f9a0c1d2e7b"
DOCS_SECRET = "docs-8b1e44a05c2d"


def _configure(workspace: Path, *, http: bool) -> Path:
    log = configure(workspace, [[{"do": "say", "text": "ok"}, {"do": "end"}]])
    toml = workspace / "attractor.toml"
    agent_env = 'env = { SCRIPTED_ACP_MCP_HTTP = "1" }\n' if http else ""
    toml.write_text(toml.read_text() + agent_env + SERVERS, encoding="utf-8")
    return log


def _run(*args: str) -> tuple[int, str]:
    env = {"TRACKER_TOKEN": TRACKER_SECRET, "DOCS_TOKEN": DOCS_SECRET}
    result = invoke(["run", "p.dot", "--logs-dir", "logs", "--sandbox", "none", *args], env)
    return result.exit_code, result.output + result.stderr


def _secrets_in(folder: Path) -> list[str]:
    return [
        str(path)
        for path in folder.rglob("*")
        if path.is_file()
        and any(s in path.read_text(errors="replace") for s in (TRACKER_SECRET, DOCS_SECRET))
    ]


def test_the_agent_gets_the_nodes_servers_with_their_secrets(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _configure(workspace, http=True)
    write(workspace / "p.dot", graph(mcp="tracker,docs"))
    code, output = _run()
    assert code == 0, output
    assert seen(log, "cwd")[0]["mcp"] == [
        {
            "name": "tracker",
            "command": "tracker-mcp",
            "args": ["--project", "web"],
            "env": [
                {"name": "TRACKER_TOKEN", "value": TRACKER_SECRET},
                {"name": "MODE", "value": "ro"},
            ],
        },
        {
            "name": "docs",
            "url": "http://127.0.0.1:9/mcp",
            "headers": [{"name": "Authorization", "value": f"Bearer {DOCS_SECRET}"}],
            "type": "http",
        },
    ]
    # Nothing the run wrote holds a secret.
    assert _secrets_in(workspace / "logs") == []


def test_a_whole_server_denied_is_left_out(workspace: Path) -> None:
    log = _configure(workspace, http=True)
    write(workspace / "p.dot", graph(mcp="tracker,docs", mcp_deny="mcp__docs__*"))
    code, output = _run()
    assert code == 0, output
    assert [server["name"] for server in seen(log, "cwd")[0]["mcp"]] == ["tracker"]


def test_a_tool_pattern_acp_cannot_honour_is_refused_before_the_run(workspace: Path) -> None:
    log = _configure(workspace, http=True)
    write(workspace / "p.dot", graph(mcp="tracker", mcp_allow="mcp__tracker__get_*"))
    code, output = _run()
    assert code == 2, output  # lint sees the node's backend
    assert "mcp_allow mcp__tracker__get_* on work cannot be honoured" in output
    # Chosen for the run only (--backend), the check before the run refuses it.
    dot = graph(mcp="tracker", mcp_allow="mcp__tracker__get_*").replace(
        'backend="acp:scripted", ', ""
    )
    write(workspace / "p.dot", dot)
    code, output = _run("--backend", "acp:scripted")
    assert code == 2, output
    assert "mcp__tracker__get_*: an ACP agent gets whole MCP servers" in output
    assert seen(log, "cwd") == []  # the agent never started


def test_an_http_server_for_an_agent_without_http_fails_the_step(workspace: Path) -> None:
    log = _configure(workspace, http=False)
    write(workspace / "p.dot", graph(mcp="docs"))
    code, output = _run()
    assert code != 0
    assert "takes no HTTP MCP servers" in output
    assert seen(log, "cwd") == []  # session/new never sent


def test_dry_run_names_the_servers(workspace: Path) -> None:
    _configure(workspace, http=True)
    write(workspace / "p.dot", graph(mcp="tracker,docs"))
    code, output = _run("--dry-run")
    assert code == 0, output
    assert "mcp servers: tracker (stdio: tracker-mcp --project web), docs (http: " in output
    assert "session/new" in output
    assert TRACKER_SECRET not in output


def test_lint_reports_a_tool_pattern_acp_cannot_honour(workspace: Path) -> None:
    _configure(workspace, http=True)
    write(workspace / "p.dot", graph(mcp="tracker,docs", mcp_deny="mcp__docs__*"))
    assert invoke(["lint", "p.dot"]).exit_code == 0
    write(workspace / "p.dot", graph(mcp="tracker", mcp_deny="mcp__tracker__delete_*"))
    result = invoke(["lint", "p.dot"])
    assert result.exit_code == 1, result.output
    assert "mcp_deny mcp__tracker__delete_* on work cannot be honoured by backend" in result.stdout
