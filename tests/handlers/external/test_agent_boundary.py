"""Agent CLIs inside the node's boundary: each CLI's process gets the node's
filtered environment plus exactly its own provider variables, is told to keep
its commands' writes and network as the node's sandbox says, and ``--dry-run``
shows that boundary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attractor.proc.bwrap import probe
from tests.cli.runkit import invoke, write
from tests.handlers.external.agentkit import agent_env, one_node_graph, starts

#: A value of each kind of variable the engine may hold.
PLANTED = {
    "ANTHROPIC_API_KEY": "sk-ant-planted-for-claude",
    "OPENAI_API_KEY": "sk-planted-for-codex",
    "CODEX_API_KEY": "planted-codex-key",
    "GEMINI_API_KEY": "planted-gemini-key",
    "SECRET_TOKEN": "planted-unrelated-secret",
    "UNRELATED_SETTING": "planted-plain-variable",
}

needs_sandbox = pytest.mark.skipif(probe() is not None, reason=f"no sandbox here: {probe()}")


def _start(
    workspace: Path, fakes: Path, backend: str, *args: str, **attrs: str
) -> tuple[Any, dict[str, Any]]:
    write(workspace / "p.dot", one_node_graph(backend, "Do it", **attrs))
    log = workspace / "starts.jsonl"
    log.unlink(missing_ok=True)
    logs = f"logs{len(list(workspace.glob('logs*')))}"
    env = agent_env(fakes, log, **PLANTED)
    result = invoke(["run", "p.dot", "--logs-dir", logs, *args], env)
    assert result.exit_code == 0, result.output + result.stderr
    (start,) = starts(log)
    return result, start


def test_claude_gets_its_own_key_and_no_other_secret(workspace: Path, fakes: Path) -> None:
    _, start = _start(workspace, fakes, "claude-code")
    env = start["env"]
    assert env["ANTHROPIC_API_KEY"] == PLANTED["ANTHROPIC_API_KEY"]
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY", "GEMINI_API_KEY", "SECRET_TOKEN"):
        assert name not in env, name
    assert "UNRELATED_SETTING" not in env  # env=core: not a core variable
    assert env["ATTRACTOR_NODE"] == "work"
    assert "PATH" in env and "HOME" in env  # the CLI still finds its config dir


@pytest.mark.parametrize(
    ("backend", "own", "foreign"),
    [
        ("codex", ("OPENAI_API_KEY", "CODEX_API_KEY"), ("ANTHROPIC_API_KEY", "GEMINI_API_KEY")),
        ("gemini-cli", ("GEMINI_API_KEY",), ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")),
    ],
)
def test_each_cli_gets_exactly_its_own_credentials(
    workspace: Path, fakes: Path, backend: str, own: tuple[str, ...], foreign: tuple[str, ...]
) -> None:
    _, start = _start(workspace, fakes, backend)
    env = start["env"]
    for name in own:
        assert env.get(name) == PLANTED[name], name
    for name in (*foreign, "SECRET_TOKEN"):
        assert name not in env, name


def test_the_node_policy_still_applies_to_the_cli(workspace: Path, fakes: Path) -> None:
    _, start = _start(
        workspace,
        fakes,
        "claude-code",
        env_allow="UNRELATED_SETTING",
        env_deny="ANTHROPIC_API_KEY",
    )
    env = start["env"]
    assert env["UNRELATED_SETTING"] == PLANTED["UNRELATED_SETTING"]
    assert "ANTHROPIC_API_KEY" not in env  # env_deny wins, even over the CLI's own key


def test_inherit_passes_everything_as_for_a_tool_node(workspace: Path, fakes: Path) -> None:
    _, start = _start(workspace, fakes, "claude-code", env="inherit")
    assert start["env"]["SECRET_TOKEN"] == PLANTED["SECRET_TOKEN"]


@needs_sandbox
def test_sandbox_on_tells_claude_to_sandbox_its_commands(workspace: Path, fakes: Path) -> None:
    (workspace / "cache").mkdir()
    _, start = _start(workspace, fakes, "claude-code", "--sandbox", "bwrap", writable="cache")
    argv = start["argv"]
    settings = json.loads(argv[argv.index("--settings") + 1])["sandbox"]
    assert settings["enabled"] is True
    assert settings["allowUnsandboxedCommands"] is False
    assert settings["failIfUnavailable"] is True
    assert settings["network"]["allowedDomains"] == []
    assert settings["filesystem"]["allowWrite"] == ["/" + str(workspace / "cache")]


@needs_sandbox
def test_sandbox_network_on_reaches_codex(workspace: Path, fakes: Path) -> None:
    _, start = _start(workspace, fakes, "codex", "--sandbox", "bwrap", network="on")
    argv = start["argv"]
    assert argv[argv.index("--sandbox") + 1] == "workspace-write"
    assert "sandbox_workspace_write.network_access=true" in argv
    _, start = _start(workspace, fakes, "codex", "--sandbox", "bwrap", network="off")
    assert "sandbox_workspace_write.network_access=false" in start["argv"]


@needs_sandbox
def test_an_allow_list_of_hosts_reaches_claude_and_keeps_codex_off(
    workspace: Path, fakes: Path
) -> None:
    hosts = "api.github.com,pypi.org"
    _, start = _start(workspace, fakes, "claude-code", "--sandbox", "bwrap", network=hosts)
    argv = start["argv"]
    settings = json.loads(argv[argv.index("--settings") + 1])["sandbox"]
    assert settings["network"]["allowedDomains"] == ["api.github.com", "pypi.org"]
    _, start = _start(workspace, fakes, "codex", "--sandbox", "bwrap", network=hosts)
    assert "sandbox_workspace_write.network_access=false" in start["argv"]


def test_sandbox_none_leaves_the_cli_flags_as_before(workspace: Path, fakes: Path) -> None:
    _, start = _start(workspace, fakes, "claude-code", "--sandbox", "none")
    assert "--settings" not in start["argv"]
    _, start = _start(workspace, fakes, "codex", "--sandbox", "none")
    assert not any("network_access" in a for a in start["argv"])


def _boundaries(workspace: Path, fakes: Path, graph: str, *args: str) -> list[str]:
    write(workspace / "p.dot", graph)
    env = agent_env(fakes, workspace / "starts.jsonl", **PLANTED)
    result = invoke(["run", "p.dot", "--dry-run", *args], env)
    assert result.exit_code == 0, result.output + result.stderr
    return [line.strip() for line in result.output.splitlines() if "boundary:" in line]


@needs_sandbox
def test_dry_run_shows_each_cli_nodes_boundary(workspace: Path, fakes: Path) -> None:
    graph = """digraph p {
        start [shape=Mdiamond]
        done  [shape=Msquare]
        a [shape=box, backend="claude-code", prompt="x"]
        b [shape=box, backend="codex", prompt="x", network=on]
        c [shape=box, backend="gemini-cli", prompt="x"]
        d [shape=box, backend="claude-code", prompt="x", sandbox=none]
        start -> a -> b -> c -> d -> done
    }"""
    # agent_env allows the fake's own FAKE_AGENT_* settings
    assert _boundaries(workspace, fakes, graph) == [
        "boundary: claude-code outside the sandbox (it needs its provider), "
        "env=core allow=FAKE_AGENT_* + own: "
        "ANTHROPIC_API_KEY; its commands: Claude Code's Bash sandbox, network off, "
        "writable: workdir",
        "boundary: codex outside the sandbox (it needs its provider), "
        "env=core allow=FAKE_AGENT_* + own: "
        "CODEX_API_KEY, OPENAI_API_KEY; its commands: Codex's workspace-write sandbox, "
        "network on, writable: workdir",
        "boundary: gemini-cli outside the sandbox (it needs its provider), "
        "env=core allow=FAKE_AGENT_* + own: "
        "GEMINI_API_KEY; its commands: not sandboxed (gemini-cli has no sandbox that works "
        "without a container)",
        "boundary: claude-code, local, no sandbox, "
        "env=core allow=FAKE_AGENT_* + own: ANTHROPIC_API_KEY",
    ]


@needs_sandbox
def test_a_required_sandbox_refuses_gemini_whose_commands_it_cannot_fence(
    workspace: Path, fakes: Path
) -> None:
    write(workspace / "p.dot", one_node_graph("gemini-cli", "Do it"))
    log = workspace / "starts.jsonl"
    env = agent_env(fakes, log, **PLANTED)
    result = invoke(["run", "p.dot", "--logs-dir", "logs", "--sandbox", "required"], env)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: node work: backend gemini-cli cannot run its commands in a sandbox (its own "
        "sandbox needs a container engine), but the run requires one (--sandbox required); "
        "use backend claude-code, codex or llm for this node"
    ]
    assert starts(log) == []
    _, start = _start(workspace, fakes, "claude-code", "--sandbox", "required")
    assert "--settings" in start["argv"]  # a CLI with its own sandbox runs


@needs_sandbox
def test_claude_without_what_its_sandbox_needs_runs_unsandboxed_or_is_refused(
    workspace: Path, fakes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's own sandbox needs socat; a machine without it (here: a tool
    name no machine has) must not have every claude-code node fail at start."""
    import dataclasses

    from attractor.handlers.external.agents import AGENTS

    lacking = dataclasses.replace(
        AGENTS["claude-code"], sandbox_needs=("bwrap", "attractor-no-such-tool")
    )
    monkeypatch.setitem(AGENTS, "claude-code", lacking)
    _, start = _start(workspace, fakes, "claude-code")  # sandbox=auto
    assert "--settings" not in start["argv"]  # its commands run unsandboxed
    write(workspace / "p.dot", one_node_graph("claude-code", "Do it"))
    env = agent_env(fakes, workspace / "starts.jsonl", **PLANTED)
    result = invoke(["run", "p.dot", "--sandbox", "required", "--logs-dir", "refused"], env)
    assert result.exit_code == 2, result.output + result.stderr
    assert "needs attractor-no-such-tool" in result.stderr
    assert "Traceback" not in result.stderr
    dry = invoke(["run", "p.dot", "--dry-run"], env)
    assert "not sandboxed (Claude Code's Bash sandbox needs attractor-no-such-tool)" in dry.output
