"""Agent CLIs get the node's MCP servers in their own configuration.

The construction is checked offline; then, where ``AGENT_CLIS_BIN`` points at
the real CLIs (``.ci/run`` installs them), each real CLI is shown the
configuration and must see the SDK-built test server: Claude Code lists its
tools in its start-up event (no login needed), Gemini CLI connects to it in
``gemini mcp list``, Codex lists it in ``codex mcp list --json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from attractor.errors import UsageError
from attractor.handlers.external.agents import AGENTS
from attractor.handlers.external.mcp import CliServers, claude_args, codex_args, gemini_env
from attractor.handlers.external.spec import Invocation
from attractor.mcp_config import McpServerConfig

SERVER = Path(__file__).parents[2] / "agent" / "mcp_servers" / "tools_server.py"
TRACKER = McpServerConfig(
    "tracker",
    command=sys.executable,
    args=(str(SERVER),),
    env=(("TRACKER_TOKEN", "${TRACKER_TOKEN}"), ("MODE", "test")),
    startup_timeout=20.0,
    call_timeout=60.0,
)
DOCS = McpServerConfig(
    "docs",
    url="http://127.0.0.1:8123/mcp",
    headers=(("Authorization", "Bearer ${DOCS_TOKEN}"), ("X-Team", "web")),
)
PLAN = CliServers((TRACKER, DOCS), allow=(("tracker", "echo"),), deny=(("docs", "delete"),))


def test_claude_code_gets_the_servers_as_written_and_their_tools_allowed() -> None:
    argv = AGENTS["claude-code"].argv(Invocation(max_turns=3, mcp=PLAN))
    config = json.loads(argv[argv.index("--mcp-config") + 1])
    assert config["mcpServers"]["tracker"] == {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": {"TRACKER_TOKEN": "${TRACKER_TOKEN}", "MODE": "test"},
    }
    assert config["mcpServers"]["docs"]["headers"]["Authorization"] == "Bearer ${DOCS_TOKEN}"
    assert "--strict-mcp-config" in argv
    allowed = argv[argv.index("--allowed-tools") + 1 : argv.index("--disallowed-tools")]
    assert allowed == ["Bash", "mcp__tracker__echo", "mcp__docs"]
    assert argv[argv.index("--disallowed-tools") + 1] == "mcp__docs__delete"


def test_no_servers_no_flags() -> None:
    assert claude_args(CliServers()) == ([], [], [])
    assert codex_args(CliServers()) == []
    assert "--mcp-config" not in AGENTS["claude-code"].argv(Invocation(max_turns=3))


def test_codex_gets_overrides_with_secrets_by_variable_name() -> None:
    argv = AGENTS["codex"].argv(Invocation(max_turns=3, mcp=PLAN))
    assert argv[-1] == "-"
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "--config"]
    assert f"mcp_servers.tracker.command={json.dumps(sys.executable)}" in overrides
    assert 'mcp_servers.tracker.env={"MODE" = "test"}' in overrides
    assert 'mcp_servers.tracker.env_vars=["TRACKER_TOKEN"]' in overrides
    assert 'mcp_servers.tracker.enabled_tools=["echo"]' in overrides
    assert 'mcp_servers.docs.bearer_token_env_var="DOCS_TOKEN"' in overrides
    assert 'mcp_servers.docs.http_headers={"X-Team" = "web"}' in overrides
    assert 'mcp_servers.docs.disabled_tools=["delete"]' in overrides
    assert not any("${" in o for o in overrides)  # no secret, no template Codex cannot expand


def test_codex_refuses_what_it_cannot_express() -> None:
    renamed = McpServerConfig("t", command="x", env=(("TOKEN", "${OTHER}"),), source="t")
    with pytest.raises(UsageError, match=r'write TOKEN = "\$\{TOKEN\}"'):
        codex_args(CliServers((renamed,)))
    with pytest.raises(UsageError, match="exact tool names only"):
        codex_args(CliServers((TRACKER,), allow=(("tracker", "get_*"),)))


def test_gemini_cli_reads_a_settings_file_in_the_stage_dir(private_dir: Path) -> None:
    env = gemini_env(PLAN, private_dir)
    settings = json.loads(Path(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text())
    tracker = settings["mcpServers"]["tracker"]
    assert tracker["env"]["TRACKER_TOKEN"] == "${TRACKER_TOKEN}" and tracker["includeTools"] == [
        "echo"
    ]
    assert settings["mcpServers"]["docs"]["httpUrl"] == DOCS.url
    assert settings["mcpServers"]["docs"]["excludeTools"] == ["delete"]
    assert settings["security"]["folderTrust"]["enabled"] is False


def test_gemini_cli_settings_under_a_folder_others_can_write_are_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UsageError, match="Gemini CLI skips a settings file under a folder"):
        gemini_env(PLAN, shared)


@pytest.fixture
def private_dir() -> Iterator[Path]:
    """A folder no other user can write, up to the root (Gemini CLI insists)."""
    base = Path.home() / ".cache"
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base) as folder:
        path = Path(folder)
        if any(p.stat().st_mode & 0o022 for p in (path, *path.parents)):
            pytest.skip(f"no folder here that only its owner can write ({path})")
        yield path


# -- the real CLIs ---------------------------------------------------------------------


@pytest.fixture
def real_env(private_dir: Path) -> dict[str, str]:
    where = os.environ.get("AGENT_CLIS_BIN")
    if not where:
        pytest.skip(
            "the real agent CLIs are not installed: bash .ci/run installs them, or set "
            "AGENT_CLIS_BIN=~/.cache/attractor/agent-clis/node_modules/.bin after it"
        )
    home = private_dir / "home"
    home.mkdir()
    return {
        "PATH": f"{where}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TRACKER_TOKEN": "tok-123",
    }


def _run(argv: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> str:
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )
    return done.stdout + done.stderr


def test_real_claude_code_connects_to_the_server_and_sees_its_tools(
    real_env: dict[str, str], private_dir: Path
) -> None:
    plan = CliServers((TRACKER,), deny=(("tracker", "stall"),))
    argv = AGENTS["claude-code"].argv(Invocation(max_turns=2, mcp=plan))
    out = _run(argv, real_env, private_dir, stdin="say hi")
    init = json.loads(out.splitlines()[0])
    assert {"name": "tracker", "status": "connected"}.items() <= init["mcp_servers"][0].items()
    assert "mcp__tracker__echo" in init["tools"]


def test_real_gemini_cli_connects_to_the_server(
    real_env: dict[str, str], private_dir: Path
) -> None:
    env = {**real_env, **gemini_env(CliServers((TRACKER,)), private_dir)}
    out = _run(["gemini", "mcp", "list"], env, private_dir)
    assert "tracker" in out and "Connected" in out, out


def test_real_codex_reads_the_overrides(real_env: dict[str, str], private_dir: Path) -> None:
    overrides = codex_args(PLAN)
    out = _run(["codex", *overrides, "mcp", "list", "--json"], real_env, private_dir)
    listed = {s["name"]: s for s in json.loads(out[out.index("[") :])}
    assert listed["tracker"]["transport"]["env_vars"] == ["TRACKER_TOKEN"]
    assert listed["tracker"]["transport"]["env"] == {"MODE": "test"}
    assert listed["docs"]["transport"]["url"] == DOCS.url
    assert listed["docs"]["transport"]["bearer_token_env_var"] == "DOCS_TOKEN"
