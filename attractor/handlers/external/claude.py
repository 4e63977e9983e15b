"""Claude Code (``claude``, npm ``@anthropic-ai/claude-code``, checked at 2.1.330).

Started as ``claude -p --output-format stream-json --verbose --max-turns N``
with the prompt on stdin. The stream is one JSON object per line:

- ``{"type": "system", "subtype": "init", ...}`` once;
- ``{"type": "assistant", "message": {"id", "content": [text | tool_use], "usage"}}``
  per content block (blocks of one model response share ``message.id``);
- ``{"type": "user", "message": {"content": [tool_result]}}`` with tool results;
- ``{"type": "result", "subtype": "success" | "error_max_turns" | ...,
  "is_error", "result", "num_turns", "usage", "total_cost_usd"}`` at the end.

Not logged in, it still streams: an assistant message with
``"error": "authentication_failed"`` and an ``is_error`` result, exit 1.
"""

from __future__ import annotations

import json
from typing import Any

from attractor.handlers.external.mcp import claude_args
from attractor.handlers.external.spec import AgentCli, Invocation
from attractor.handlers.external.steps import (
    Failed,
    Finished,
    Said,
    Step,
    TokensUsed,
    ToolDone,
    ToolUsed,
    TurnStarted,
    as_int,
    as_text,
)


class ClaudeParser:
    """Steps from Claude Code's ``stream-json`` lines."""

    def __init__(self) -> None:
        self._messages: set[str] = set()

    def feed(self, event: dict[str, Any]) -> list[Step]:
        kind = event.get("type")
        if kind == "assistant":
            return self._assistant(event)
        if kind == "user":
            return _tool_results(event.get("message"))
        if kind == "result":
            return _result(event)
        return []

    def _assistant(self, event: dict[str, Any]) -> list[Step]:
        message = event.get("message")
        if not isinstance(message, dict):
            return []
        steps: list[Step] = []
        if event.get("error") == "authentication_failed":
            steps.append(Failed(as_text(message.get("content")), auth=True))
            return steps
        if event.get("parent_tool_use_id"):
            return []  # a sub-agent's turn: part of the tool call that started it
        message_id = str(message.get("id") or len(self._messages))
        if message_id not in self._messages:
            self._messages.add(message_id)
            steps.append(TurnStarted())
            usage = message.get("usage")
            if isinstance(usage, dict):
                steps.append(_tokens(usage, total=False))
        for block in _blocks(message):
            if block.get("type") == "text" and block.get("text"):
                steps.append(Said(str(block["text"])))
            elif block.get("type") == "tool_use":
                arguments = block.get("input")
                steps.append(
                    ToolUsed(
                        str(block.get("id", "")),
                        str(block.get("name", "tool")),
                        arguments if isinstance(arguments, dict) else {},
                    )
                )
        return steps


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_results(message: Any) -> list[Step]:
    if not isinstance(message, dict):
        return []
    return [
        ToolDone(
            str(block.get("tool_use_id", "")),
            as_text(block.get("content")),
            bool(block.get("is_error")),
        )
        for block in _blocks(message)
        if block.get("type") == "tool_result"
    ]


def _tokens(usage: dict[str, Any], *, total: bool, cost: Any = None) -> TokensUsed:
    read = as_int(usage.get("cache_read_input_tokens"))
    written = as_int(usage.get("cache_creation_input_tokens"))
    return TokensUsed(
        as_int(usage.get("input_tokens")) + read + written,
        as_int(usage.get("output_tokens")),
        total=total,
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def _result(event: dict[str, Any]) -> list[Step]:
    steps: list[Step] = []
    usage = event.get("usage")
    if isinstance(usage, dict):
        steps.append(_tokens(usage, total=True, cost=event.get("total_cost_usd")))
    text = as_text(event.get("result"))
    subtype = str(event.get("subtype", ""))
    if subtype == "error_max_turns":
        steps.append(Finished("max_turns", text))
    elif event.get("is_error") or subtype.startswith("error"):
        message = text or "; ".join(as_text(e) for e in event.get("errors") or []) or subtype
        steps.append(Finished("error", "", message))
    else:
        steps.append(Finished("success", text))
    return steps


def _argv(invocation: Invocation) -> list[str]:
    argv = ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    argv += ["--max-turns", str(invocation.max_turns)]
    mcp, allowed, denied = claude_args(invocation.mcp)
    # Edits are accepted and shell commands allowed, as the built-in agent does
    # (and the node's MCP tools); bypassPermissions is refused when running as
    # root, acceptEdits is not.
    argv += [*mcp, "--permission-mode", "acceptEdits", "--allowed-tools", "Bash", *allowed]
    if denied:
        argv += ["--disallowed-tools", *denied]
    if invocation.model:
        argv += ["--model", invocation.model]
    if invocation.reasoning_effort:
        argv += ["--effort", invocation.reasoning_effort]
    if invocation.sandboxed:
        argv += ["--settings", json.dumps({"sandbox": _sandbox(invocation)}, sort_keys=True)]
    return argv


def _sandbox(invocation: Invocation) -> dict[str, Any]:
    """Claude Code's own Bash sandbox (bubblewrap on Linux), set as attractor's boundary says.

    Writes stay in the working directory (its default) plus ``writable``; a
    command the sandbox refuses may not be retried outside it; no sandbox here
    is a failure, not a silent fallback.
    """
    domains = ["*"] if invocation.network else list(invocation.hosts)
    settings: dict[str, Any] = {
        "enabled": True,
        "failIfUnavailable": True,
        "autoAllowBashIfSandboxed": True,
        "allowUnsandboxedCommands": False,
        "network": {"allowedDomains": domains},
    }
    if invocation.writable:
        # "//" marks an absolute path in Claude Code's settings ("/" is the settings file's folder)
        settings["filesystem"] = {"allowWrite": ["/" + str(p) for p in invocation.writable]}
    return settings


CLAUDE = AgentCli(
    name="claude-code",
    executable="claude",
    package="@anthropic-ai/claude-code",
    checked_version="2.1.330",
    build_argv=_argv,
    parser=ClaudeParser,
    turn_flag=True,
    status_command=("auth", "status", "--text"),
    login_hint="run `claude auth login` or set ANTHROPIC_API_KEY",
    command_sandbox="Claude Code's Bash sandbox",
    sandbox_needs=("bwrap", "socat"),
    filters_hosts=True,
    passed_env=(
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_MODEL",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
    ),
)
