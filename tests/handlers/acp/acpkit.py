"""A scripted ACP agent in a config file, and pipelines that run it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.handlers.external.agentkit import one_node_graph

AGENT = Path(__file__).with_name("scripted_agent.py")


def configure(
    workspace: Path,
    turns: list[list[dict[str, Any]]],
    name: str = "scripted",
    folder: Path | None = None,
) -> Path:
    """attractor.toml naming the scripted agent with ``turns``; the agent's log file.

    The script and log live in ``folder`` (default: beside the workspace; a
    sandboxed agent needs them inside it, since the sandbox hides /tmp).
    """
    folder = folder or workspace.parent
    script = folder / f"{name}-script.json"
    script.write_text(json.dumps(turns), encoding="utf-8")
    log = folder / f"{name}-agent.jsonl"
    args = json.dumps([str(AGENT), str(script), str(log)])
    (workspace / "attractor.toml").write_text(
        f"[acp_agents.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n",
        encoding="utf-8",
    )
    return log


def agent_log(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def seen(log: Path, key: str) -> list[dict[str, Any]]:
    """The agent's log entries that have ``key``."""
    return [entry for entry in agent_log(log) if key in entry]


def graph(prompt: str = "Fix the bug.", **attrs: str) -> str:
    """start -> work -> done, where ``work`` runs the scripted ACP agent."""
    return one_node_graph("acp:scripted", prompt, graph_name="acp", **attrs)
