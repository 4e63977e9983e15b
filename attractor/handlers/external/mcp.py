"""A node's MCP servers in each agent CLI's own configuration (see docs/agent-clis.md).

The CLI starts and talks to the servers itself; attractor only tells it which,
per attempt, without touching the user's own configuration files:

- Claude Code: ``--mcp-config JSON --strict-mcp-config`` (only these servers),
  their tools allowed by ``--allowed-tools mcp__NAME`` (or the node's
  ``mcp_allow`` entries) and ``mcp_deny`` as ``--disallowed-tools``;
- Codex: ``-c mcp_servers.NAME.KEY=VALUE`` overrides, ``mcp_allow``/``mcp_deny``
  as ``enabled_tools``/``disabled_tools`` (exact tool names only);
- Gemini CLI: a settings file in the stage directory named by
  ``GEMINI_CLI_SYSTEM_SETTINGS_PATH`` (``includeTools``/``excludeTools``, exact
  names only).

No secret goes on a command line or into a file: ``${VAR}`` stays as written
(each CLI expands it from its own environment, where attractor puts the
variables the servers name), and what a CLI cannot express that way (Codex
renaming a variable, a glob for Codex or Gemini) is refused with a UsageError
that says what to write instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from attractor.errors import UsageError
from attractor.fileio.writes import write_text
from attractor.mcp_config import McpServerConfig
from attractor.valueclass import frozen

Patterns = tuple[tuple[str, str], ...]

_WHOLE_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_BEARER = re.compile(r"Bearer \$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: The settings file a Gemini CLI attempt reads its MCP servers from.
GEMINI_SETTINGS = "gemini-mcp-settings.json"


@frozen
class CliServers:
    """The MCP servers of one CLI attempt, ``${VAR}`` kept as written."""

    servers: tuple[McpServerConfig, ...] = ()
    allow: Patterns = ()
    deny: Patterns = ()

    def variables(self) -> list[str]:
        """The variables the servers name: they must reach the CLI's environment."""
        return [name for server in self.servers for name in server.variables()]

    def allowed(self, server: str) -> list[str]:
        return [pattern for name, pattern in self.allow if name == server]

    def denied(self, server: str) -> list[str]:
        return [pattern for name, pattern in self.deny if name == server]


# -- Claude Code ---------------------------------------------------------------


def claude_args(plan: CliServers) -> tuple[list[str], list[str], list[str]]:
    """``--mcp-config`` for Claude Code, and the tool rules to allow and to deny."""
    if not plan.servers:
        return [], [], []
    config = {"mcpServers": {s.name: _claude_server(s) for s in plan.servers}}
    allowed: list[str] = []
    denied: list[str] = []
    for server in plan.servers:
        own = plan.allowed(server.name)
        allowed += [f"mcp__{server.name}__{p}" for p in own] or [f"mcp__{server.name}"]
        denied += [f"mcp__{server.name}__{p}" for p in plan.denied(server.name)]
    argv = ["--mcp-config", json.dumps(config, sort_keys=True), "--strict-mcp-config"]
    return argv, allowed, denied


def _claude_server(server: McpServerConfig) -> dict[str, Any]:
    if server.command is not None:
        entry: dict[str, Any] = {"type": "stdio", "command": server.command}
        entry["args"] = list(server.args)
        if server.env:
            entry["env"] = dict(server.env)
        return entry
    entry = {"type": "http", "url": server.url}
    if server.headers:
        entry["headers"] = dict(server.headers)
    return entry


# -- Codex -------------------------------------------------------------------------


def codex_args(plan: CliServers) -> list[str]:
    """``-c mcp_servers.NAME.KEY=VALUE`` overrides for ``codex exec``."""
    argv: list[str] = []
    for server in plan.servers:
        for key, value in _codex_server(server, plan).items():
            argv += ["--config", f"mcp_servers.{server.name}.{key}={value}"]
    return argv


def _toml(value: Any) -> str:
    """A TOML value: strings and lists of strings as JSON writes them, tables inline."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _codex_server(server: McpServerConfig, plan: CliServers) -> dict[str, str]:
    where = f"{server.source or server.name} (backend codex)"
    entry: dict[str, Any] = {}
    if server.command is not None:
        entry["command"] = server.command
        entry["args"] = list(server.args)
        literal, forwarded = _codex_env(server, where)
        if literal:
            entry["env"] = literal
        if forwarded:
            entry["env_vars"] = forwarded
    else:
        entry["url"] = server.url
        entry.update(_codex_headers(server, where))
    entry["startup_timeout_sec"] = server.startup_timeout
    entry["tool_timeout_sec"] = server.call_timeout
    for key, patterns in (
        ("enabled_tools", plan.allowed(server.name)),
        ("disabled_tools", plan.denied(server.name)),
    ):
        if patterns:
            entry[key] = _exact(patterns, "codex", server.name)
    return {key: _toml(value) for key, value in entry.items()}


def _codex_env(server: McpServerConfig, where: str) -> tuple[dict[str, str], list[str]]:
    literal: dict[str, str] = {}
    forwarded: list[str] = []
    for key, value in server.env:
        whole = _WHOLE_VARIABLE.fullmatch(value)
        if whole is not None and whole.group(1) == key:
            forwarded.append(key)  # Codex passes it on from its own environment
        elif "${" in value:
            raise UsageError(
                f"{where}: env {key} = {value!r}: Codex forwards a variable only under its "
                f'own name: write {key} = "${{{key}}}" and set {key}'
            )
        else:
            literal[key] = value
    return literal, forwarded


def _codex_headers(server: McpServerConfig, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    literal: dict[str, str] = {}
    from_env: dict[str, str] = {}
    for key, value in server.headers:
        bearer = _BEARER.fullmatch(value)
        whole = _WHOLE_VARIABLE.fullmatch(value)
        if key.lower() == "authorization" and bearer is not None:
            out["bearer_token_env_var"] = bearer.group(1)
        elif whole is not None:
            from_env[key] = whole.group(1)
        elif "${" in value:
            raise UsageError(
                f"{where}: header {key}: Codex takes a header from a variable only whole "
                f'("${{VAR}}") or as Authorization = "Bearer ${{VAR}}"'
            )
        else:
            literal[key] = value
    if literal:
        out["http_headers"] = literal
    if from_env:
        out["env_http_headers"] = from_env
    return out


def _exact(patterns: list[str], cli: str, server: str) -> list[str]:
    for pattern in patterns:
        if any(c in pattern for c in "*?[]!"):
            raise UsageError(
                f"mcp_allow/mcp_deny mcp__{server}__{pattern}: backend {cli} takes exact "
                "tool names only; list the tools one by one"
            )
    return patterns


# -- Gemini CLI -------------------------------------------------------------------


def gemini_env(plan: CliServers, stage_dir: Path) -> dict[str, str]:
    """Write the attempt's settings file; the variable that points Gemini CLI at it.

    The file also turns Gemini CLI's folder trust off (the node runs it with
    ``--skip-trust`` already), which would otherwise disable the servers.

    Raises:
        UsageError: a folder above the stage directory is writable by others:
            Gemini CLI would skip the file without a word.
    """
    if not plan.servers:
        return {}
    _check_private(stage_dir)
    servers = {s.name: _gemini_server(s, plan) for s in plan.servers}
    settings = {"mcpServers": servers, "security": {"folderTrust": {"enabled": False}}}
    path = stage_dir / GEMINI_SETTINGS
    write_text(path, json.dumps(settings, indent=2, sort_keys=True) + "\n")
    return {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(path)}


def _check_private(stage_dir: Path) -> None:
    for folder in (stage_dir.resolve(), *stage_dir.resolve().parents):
        try:
            mode = folder.stat().st_mode
        except OSError:
            continue
        if mode & 0o022:
            raise UsageError(
                f"backend gemini-cli would ignore its MCP settings in {stage_dir}: Gemini CLI "
                f"skips a settings file under a folder others can write ({folder}); put the "
                "run directory elsewhere (--logs-dir)"
            )


def _gemini_server(server: McpServerConfig, plan: CliServers) -> dict[str, Any]:
    entry: dict[str, Any]
    if server.command is not None:
        entry = {"command": server.command, "args": list(server.args)}
        if server.env:
            entry["env"] = dict(server.env)
    else:
        entry = {"httpUrl": server.url}
        if server.headers:
            entry["headers"] = dict(server.headers)
    entry["timeout"] = int(server.call_timeout * 1000)
    allowed, denied = plan.allowed(server.name), plan.denied(server.name)
    if allowed:
        entry["includeTools"] = _exact(allowed, "gemini-cli", server.name)
    if denied:
        entry["excludeTools"] = _exact(denied, "gemini-cli", server.name)
    return entry
