"""The real agent CLIs accept every command line the adapters build.

``.ci/run`` installs the checked versions from the npm registry and points
``AGENT_CLIS_BIN`` at their executables; these tests need no login and no
network. A renamed or removed flag fails here rather than in a user's run.

- Claude Code and Gemini CLI are started for real with no credentials: they
  must get past their argument parser to the login error.
- Codex, started for real, would wait on the network, so its parser is asked
  instead: the same argv followed by ``--help`` (clap rejects an unknown flag
  or value before it prints help).
- Preflight against each real CLI reports "not logged in" (exit 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attractor.errors import UsageError
from attractor.handlers.external.agents import AGENTS
from attractor.handlers.external.mcp import CliServers
from attractor.handlers.external.preflight import check_cli
from attractor.handlers.external.spec import AgentCli, Invocation
from attractor.handlers.external.steps import Failed
from attractor.mcp_config import McpServerConfig
from tests.cli.runkit import write
from tests.handlers.external.agentkit import one_node_graph

#: Every flag the adapters can emit: the budget alone, then model and effort too.
MODELS = {"claude-code": "sonnet", "codex": "gpt-5", "gemini-cli": "gemini-2.5-flash"}
#: Flags Claude Code accepts but leaves out of ``--help``.
HIDDEN = {"claude-code": {"--max-turns"}}
RUN_TIMEOUT = 90


_MCP = CliServers(
    (
        McpServerConfig("tracker", command="true"),
        McpServerConfig("docs", url="http://127.0.0.1:9/mcp"),
    ),
    allow=(("tracker", "echo"),),
    deny=(("docs", "delete"),),
)


def _invocations(backend: str) -> list[Invocation]:
    return [
        Invocation(max_turns=5),
        Invocation(max_turns=5, model=MODELS[backend], reasoning_effort="high"),
        # attractor's sandbox on: the CLI's own sandbox flags
        Invocation(max_turns=5, sandboxed=True, network=True, writable=(Path("/tmp"),)),
        # MCP servers (tests/handlers/external/test_mcp_clis.py runs them for real)
        Invocation(max_turns=5, mcp=_MCP),
    ]


@pytest.fixture(scope="module")
def real_bin() -> Path:
    where = os.environ.get("AGENT_CLIS_BIN")
    if not where:
        pytest.skip(
            "the real agent CLIs are not installed: apt-get install nodejs npm socat, "
            "then bash .ci/run (it installs them with npm and runs these tests), or set "
            "AGENT_CLIS_BIN=~/.cache/attractor/agent-clis/node_modules/.bin after it"
        )
    return Path(where)


@pytest.fixture
def bare_env(real_bin: Path, tmp_path: Path) -> dict[str, str]:
    """No credentials, an empty HOME, the real CLIs first on PATH."""
    home = tmp_path / "home"
    home.mkdir()
    return {"PATH": f"{real_bin}{os.pathsep}/usr/local/bin:/usr/bin:/bin", "HOME": str(home)}


def _run(
    cli: AgentCli, args: list[str], env: dict[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [cli.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=RUN_TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize("backend", list(AGENTS))
def test_the_installed_version_is_the_checked_one(
    backend: str, bare_env: dict[str, str], tmp_path: Path
) -> None:
    cli = AGENTS[backend]
    done = _run(cli, ["--version"], bare_env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert cli.checked_version in done.stdout


@pytest.mark.parametrize("backend", list(AGENTS))
def test_help_lists_every_flag_the_adapter_uses(
    backend: str, bare_env: dict[str, str], tmp_path: Path
) -> None:
    cli = AGENTS[backend]
    argv = [a for i in _invocations(backend) for a in cli.argv(i)]
    subcommand = [a for a in argv[1:2] if not a.startswith("-")]
    done = _run(cli, [*subcommand, "--help"], bare_env, tmp_path)
    assert done.returncode == 0, done.stderr
    flags = {a for a in argv if a.startswith("--")} - HIDDEN.get(backend, set())
    assert [f for f in sorted(flags) if f not in done.stdout] == []


@pytest.mark.parametrize("invocation", [0, 1, 2, 3])
def test_claude_code_gets_past_its_parser_to_the_login_error(
    invocation: int, bare_env: dict[str, str], tmp_path: Path
) -> None:
    cli = AGENTS["claude-code"]
    argv = cli.argv(_invocations("claude-code")[invocation])
    done = _run(cli, argv[1:], bare_env, tmp_path, stdin="say hi")
    assert "unknown option" not in done.stderr and "error:" not in done.stderr, done.stderr
    parser = cli.parser()
    steps = [s for line in done.stdout.splitlines() for s in parser.feed(json.loads(line))]
    assert [s for s in steps if isinstance(s, Failed) and s.auth], done.stdout


@pytest.mark.parametrize("invocation", [0, 1, 2, 3])
def test_gemini_cli_gets_past_its_parser_to_the_login_error(
    invocation: int, bare_env: dict[str, str], tmp_path: Path
) -> None:
    cli = AGENTS["gemini-cli"]
    argv = cli.argv(_invocations("gemini-cli")[invocation])
    done = _run(cli, argv[1:], bare_env, tmp_path, stdin="say hi")
    assert done.returncode == cli.auth_exit_code, done.stderr
    assert "Unknown argument" not in done.stderr
    assert "Auth method" in done.stderr


@pytest.mark.parametrize("invocation", [0, 1, 2, 3])
def test_codex_s_parser_accepts_the_command_line(
    invocation: int, bare_env: dict[str, str], tmp_path: Path
) -> None:
    cli = AGENTS["codex"]
    argv = cli.argv(_invocations("codex")[invocation])
    done = _run(cli, [*argv[1:], "--help"], bare_env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Run Codex non-interactively" in done.stdout
    renamed = _run(cli, [*argv[1:-1], "--no-such-flag", "--help"], bare_env, tmp_path)
    assert renamed.returncode == 2  # the same check catches a flag the parser lacks


@pytest.mark.parametrize("backend", list(AGENTS))
def test_preflight_reports_the_real_cli_as_not_logged_in(
    backend: str, bare_env: dict[str, str]
) -> None:
    with pytest.raises(UsageError, match=f"node work: backend {backend} is not logged in"):
        check_cli(AGENTS[backend], "work", bare_env)


def test_attractor_run_exits_2_before_the_node_when_claude_is_not_logged_in(
    bare_env: dict[str, str], tmp_path: Path
) -> None:
    write(tmp_path / "p.dot", one_node_graph("claude-code", "say hi"))
    env = {**bare_env, "PATH": f"{bare_env['PATH']}{os.pathsep}{os.path.dirname(sys.executable)}"}
    done = subprocess.run(
        [sys.executable, "-m", "attractor", "run", "p.dot", "--logs-dir", "logs"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert (
        "backend claude-code is not logged in (`claude auth status --text` says: Not logged in"
        in (done.stderr)
    )
    assert not (tmp_path / "logs").exists()
