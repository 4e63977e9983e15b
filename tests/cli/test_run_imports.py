"""What a run imports: nothing it does not use.

Start-up is most of a short run's time, so a simulate run and a run of tool
nodes must not load the agent loop, the LLM clients, the agent CLIs, MCP, ACP
or Ray, and ``attractor run --help`` must not load the engine, the display or
the settings: each check runs the real CLI in a fresh interpreter and lists
the heavy modules it found loaded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: Modules (and their submodules) a simulate or tool-only run must not load.
HEAVY = (
    "attractor.agent.session",
    "attractor.agent.tools",
    "attractor.agent.mcp",
    "attractor.agent.profiles",
    "attractor.llm.factory",
    "attractor.llm.sdk_model",
    "attractor.llm.openai_model",
    "attractor.llm.anthropic_model",
    "attractor.llm.gemini_model",
    "attractor.llm.scripted",
    "attractor.handlers.agent_backend",
    "attractor.handlers.acp",
    "attractor.handlers.external.agents",
    "attractor.handlers.external.backend",
    "attractor.handlers.external.preflight",
    "attractor.handlers.external.claude",
    "attractor.handlers.external.codex",
    "attractor.handlers.external.gemini",
    "attractor.ray_exec",
    "openai",
    "anthropic",
    "httpx",
    "mcp",
    "acp",
    "ray",
    # The checks run with --quiet, whose display writes plain lines: no rich.
    "rich",
)

PROBE = """
import sys
from attractor.cli.main import cli
heavy = {heavy!r}
under = tuple(h + '.' for h in heavy)
try:
    cli.main(sys.argv[1:])
except SystemExit as exit:
    loaded = sorted(m for m in sys.modules if m in heavy or m.startswith(under))
    print('HEAVY', loaded, file=sys.stderr)
    raise
"""


#: What ``attractor run --help`` must not load: it needs click and the options alone.
HELP_HEAVY = (
    "attractor.launch",
    "attractor.engine",
    "attractor.handlers",
    "attractor.settings",
    "attractor.config_file",
    "attractor.events",
    "attractor.dot",
    "attractor.linter.base",
    "attractor.cli.display",
    "attractor.cli.summary",
    "attractor.runview",
    "attractor.store",
    "rich",
    "anyio",
    "asyncio",
)


def _probe(tmp_path: Path, heavy: tuple[str, ...], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=heavy), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _loaded(tmp_path: Path, source: str, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "pipeline.dot"
    path.write_text(source, encoding="utf-8")
    result = _probe(tmp_path, HEAVY, "run", "-q", *args, str(path))
    return result.returncode, result.stdout, result.stderr


def _linear(body: str) -> str:
    nodes = "\n".join(f"  n{i} [{body}]" for i in range(10))
    edges = " -> ".join(["start", *(f"n{i}" for i in range(10)), "done"])
    return (
        f"digraph p {{\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n{nodes}\n  {edges}\n}}\n"
    )


def test_a_simulate_run_loads_no_agent_llm_or_agent_cli_module(tmp_path: Path) -> None:
    code, out, err = _loaded(tmp_path, _linear('prompt="do it"'), "--backend", "simulate")
    assert code == 0, err
    assert "pipeline succeeded" in out
    assert "HEAVY []" in err


def test_a_tool_only_run_loads_no_agent_llm_or_agent_cli_module(tmp_path: Path) -> None:
    code, out, err = _loaded(tmp_path, _linear('shape=parallelogram, tool_command="true"'))
    assert code == 0, err
    assert "pipeline succeeded" in out
    assert "HEAVY []" in err


#: What a simulated run outside a repository (``--workspace none``) with no human gate
#: has no use for either: the process machinery (no command runs), git, the human gate
#: and the interviewers (no question can be asked), the MCP and agent-CLI checks.
SIMULATE_HEAVY = (
    "attractor.proc.process",
    "attractor.proc.spawn",
    "attractor.workspace.git",
    "attractor.handlers.human",
    "attractor.handlers.interviewer",
    "attractor.handlers.mcp_servers",
    "attractor.handlers.external",
)


def test_a_simulate_run_without_gates_or_workspace_loads_only_what_it_uses(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pipeline.dot"
    path.write_text(_linear('prompt="do it"'), encoding="utf-8")
    args = ("run", "-q", "--backend", "simulate", "--workspace", "none", str(path))
    result = _probe(tmp_path, SIMULATE_HEAVY, *args)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stderr


def test_run_help_loads_neither_the_engine_nor_the_display_nor_the_settings(
    tmp_path: Path,
) -> None:
    result = _probe(tmp_path, HELP_HEAVY, "run", "--help")
    assert result.returncode == 0, result.stderr
    assert "--backend NAME" in result.stdout
    assert "HEAVY []" in result.stderr


#: What a run against an OpenAI-compatible server must not load for plain answers:
#: the OpenAI SDK (about 0.4 s of CPU to import) and the other providers' SDKs.
MODEL_HEAVY = ("openai", "anthropic", "google", "attractor.llm.openai_responses", "rich")


def test_a_run_against_a_compatible_server_loads_no_sdk(tmp_path: Path) -> None:
    from tests.llm.fake_http import FakeServer, Reply
    from tests.llm.wire import openai_completion

    path = tmp_path / "pipeline.dot"
    path.write_text(_linear('prompt="say done"'), encoding="utf-8")
    with FakeServer([Reply(body=openai_completion("done")) for _ in range(10)]).running() as server:
        args = ["run", "-q", "--backend", "llm", "--model", "local-model", "--workspace", "none"]
        args += ["--base-url", f"{server.url}/v1", str(path)]
        result = _probe(tmp_path, MODEL_HEAVY, *args)
    assert result.returncode == 0, result.stderr
    assert "pipeline succeeded" in result.stdout
    assert "HEAVY []" in result.stderr
    assert len(server.received) == 10  # each stage asked the server once


#: What a simulate run with ``--workspace none`` must not load besides HEAVY: it runs
#: no command (no sandbox, proxy or container), keeps no workspace (no git machinery),
#: has no node that writes its own status file, draws no live display and resumes
#: nothing; and it hashes its pipeline without OpenSSL.
BARE_HEAVY = (
    *HEAVY,
    "attractor.proc.bwrap",
    "attractor.proc.sandbox_env",
    "attractor.proc.container",
    "attractor.proc.netproxy",
    "attractor.workspace.branches",
    "attractor.workspace.commits",
    "attractor.workspace.create",
    "attractor.workspace.workspace",
    "attractor.agent.report",
    "attractor.runview.inventory",
    "attractor.handlers.external.runner",
    "hashlib",
)


def test_a_bare_simulate_run_loads_no_sandbox_workspace_or_openssl(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.dot"
    path.write_text(_linear('prompt="do it"'), encoding="utf-8")
    args = ["run", "-q", "--backend", "simulate", "--workspace", "none", str(path)]
    result = _probe(tmp_path, BARE_HEAVY, *args)
    assert result.returncode == 0, result.stderr
    assert "pipeline succeeded" in result.stdout
    assert "HEAVY []" in result.stderr


def test_a_run_without_gates_still_asks_on_the_terminal_when_an_agent_asks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its interviewer is made at the first question (an agent asking leave)."""
    import io

    import anyio

    from attractor.cli.run_cmd import _TerminalWhenAsked
    from attractor.handlers.interviewer import Option, Question

    monkeypatch.setattr(sys, "stdin", io.StringIO("allow\n"))
    question = Question("May the agent write files?", options=(Option("A", "allow"),))
    answer = anyio.run(_TerminalWhenAsked().ask, question)
    assert answer.value == "A" and answer.answered_by == "cli"
    assert "May the agent write files?" in capsys.readouterr().err
