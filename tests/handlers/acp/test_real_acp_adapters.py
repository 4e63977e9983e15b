"""The real ACP adapters, offline: attractor's client completes the handshake
with each, and a missing login is a clear step failure, not a hang.

``.ci/run`` installs the checked versions from npm next to the agent CLIs
(``AGENT_CLIS_BIN``; ``ACP_ADAPTERS_BIN`` overrides where the two adapters
are). No test here needs a login or the network: each adapter is started
with an empty HOME and no key, answers ``initialize`` (and, for Claude's,
``session/new``), then refuses for want of a login.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.runkit import invoke, read_json, write
from tests.handlers.acp.acpkit import graph
from tests.handlers.external.agentkit import CLI_CREDENTIALS

#: adapter -> (where to find it, its arguments, its agentInfo name, what it says without a login)
ADAPTERS = {
    "claude-agent-acp": ("ACP_ADAPTERS_BIN", [], "@agentclientprotocol/claude-agent-acp", (
        "failed the prompt: Authentication required"
    )),
    "codex-acp": ("ACP_ADAPTERS_BIN", [], "codex-acp", (
        "refused the session: Authentication required"
    )),
    "gemini": ("AGENT_CLIS_BIN", ["--acp"], "gemini-cli", (
        "refused the session: Gemini API key is missing"
    )),
}  # fmt: skip
RUN_TIMEOUT = "90s"


def _bin(variable: str) -> Path:
    where = os.environ.get(variable) or os.environ.get("AGENT_CLIS_BIN")
    if not where:
        pytest.skip(
            "the ACP adapters are not installed: apt-get install nodejs npm, then bash .ci/run "
            "(it installs them with npm and runs these tests), or set AGENT_CLIS_BIN=~/.cache/"
            "attractor/agent-clis/node_modules/.bin after it"
        )
    return Path(where)


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_a_real_adapter_shakes_hands_and_fails_clearly_without_a_login(
    workspace: Path, adapter: str
) -> None:
    variable, args, agent_name, said = ADAPTERS[adapter]
    program = _bin(variable) / adapter
    if not program.exists():
        pytest.skip(f"{program} is not installed (bash .ci/run installs it)")
    home = workspace.parent / "home"
    home.mkdir()
    write(
        workspace / "attractor.toml",
        f"[acp_agents.real]\ncommand = {json.dumps(str(program))}\nargs = {json.dumps(args)}\n",
    )
    write(workspace / "p.dot", graph().replace("acp:scripted", "acp:real"))
    env: dict[str, str | None] = dict.fromkeys(
        (*CLI_CREDENTIALS, "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    )
    env.update({"HOME": str(home), "PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}"})
    result = invoke(
        ["run", "p.dot", "--logs-dir", "logs", "--sandbox", "none", "--timeout", RUN_TIMEOUT],
        env,  # type: ignore[arg-type]
    )
    assert result.exit_code == 1, result.output + result.stderr
    status = read_json(workspace / "logs" / "work" / "status.json")
    reason = status["failure_reason"]
    assert reason.startswith(f"ACP agent real {said}"), reason
    assert "log the agent in with its own CLI" in reason or adapter == "gemini", reason
    assert status["agent"]["name"] == agent_name
