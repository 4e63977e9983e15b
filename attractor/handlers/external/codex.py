"""OpenAI Codex CLI (``codex``, npm ``@openai/codex``, checked at 0.169.0).

Started as ``codex exec --json --skip-git-repo-check --sandbox workspace-write
--color never -`` with the prompt on stdin (``-`` reads it from there). It has
no turn flag, so attractor counts turns and stops it at the limit. The stream:

- ``{"type": "thread.started", "thread_id"}``, ``{"type": "turn.started"}``;
- ``{"type": "item.started" | "item.updated" | "item.completed", "item": {...}}``
  where an item is ``reasoning``, ``agent_message`` (``text``),
  ``command_execution`` (``command``, ``aggregated_output``, ``exit_code``),
  ``file_change`` (``changes``), ``mcp_tool_call``, ``web_search``,
  ``todo_list`` or ``error``;
- ``{"type": "turn.completed", "usage": {input_tokens, cached_input_tokens,
  output_tokens}}`` or ``{"type": "turn.failed", "error": {"message"}}``;
- ``{"type": "error", "message"}`` (including reconnect notices).

A codex "turn" is the whole prompt; one of *our* turns is one model response,
counted as a run of items that starts after the previous tool call finished.
"""

from __future__ import annotations

from typing import Any

from attractor.handlers.external.mcp import codex_args
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

#: Items that are tool calls (each ends the model response that asked for it).
_TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})
_AUTH_WORDS = ("401", "unauthorized", "not logged in", "login", "api key")


class CodexParser:
    """Steps from ``codex exec --json`` lines."""

    def __init__(self) -> None:
        self._new_turn = True
        self._last_text = ""
        self._started: set[str] = set()

    def feed(self, event: dict[str, Any]) -> list[Step]:
        kind = event.get("type")
        item = event.get("item")
        if kind in ("item.started", "item.completed") and isinstance(item, dict):
            return self._item(item, completed=kind == "item.completed")
        if kind == "turn.completed":
            usage = event.get("usage")
            usage = usage if isinstance(usage, dict) else {}
            tokens = TokensUsed(
                as_int(usage.get("input_tokens")),
                as_int(usage.get("output_tokens")),
                total=True,
            )
            return [tokens, Finished("success", self._last_text)]
        if kind == "turn.failed":
            error = event.get("error")
            message = as_text(error.get("message") if isinstance(error, dict) else error)
            return [Failed(message, auth=_is_auth(message)), Finished("error", "", message)]
        return []

    def _item(self, item: dict[str, Any], *, completed: bool) -> list[Step]:
        kind = str(item.get("type", ""))
        item_id = str(item.get("id", ""))
        if kind == "error":
            return []  # warnings such as unknown model metadata; failures come as turn.failed
        steps: list[Step] = []
        if self._new_turn:
            self._new_turn = False
            steps.append(TurnStarted())
        if kind in _TOOL_ITEMS:
            if item_id not in self._started:
                self._started.add(item_id)
                steps.append(ToolUsed(item_id, kind, _arguments(item)))
            if completed:
                steps.append(ToolDone(item_id, _output(item), _failed(item)))
                self._new_turn = True
        elif kind == "agent_message" and completed:
            self._last_text = as_text(item.get("text"))
            steps.append(Said(self._last_text))
        return steps


def _arguments(item: dict[str, Any]) -> dict[str, Any]:
    keys = ("command", "changes", "server", "tool", "arguments", "query")
    return {k: item[k] for k in keys if k in item}


def _output(item: dict[str, Any]) -> str:
    if item.get("type") == "command_execution":
        return as_text(item.get("aggregated_output"))
    if item.get("type") == "mcp_tool_call":
        error = item.get("error")
        return as_text(error.get("message") if isinstance(error, dict) else item.get("result"))
    if item.get("type") == "file_change":
        changes = item.get("changes") or []
        return "\n".join(
            f"{c.get('kind', 'update')} {c.get('path', '')}" for c in changes if isinstance(c, dict)
        )
    return as_text(item.get("status"))


def _failed(item: dict[str, Any]) -> bool:
    code = item.get("exit_code")
    return item.get("status") == "failed" or (isinstance(code, int) and code != 0)


def _is_auth(message: str) -> bool:
    low = message.lower()
    return any(word in low for word in _AUTH_WORDS)


def _argv(invocation: Invocation) -> list[str]:
    argv = ["codex", "exec", "--json", "--skip-git-repo-check"]
    argv += ["--sandbox", "workspace-write", "--color", "never"]
    if invocation.model:
        argv += ["--model", invocation.model]
    if invocation.reasoning_effort:
        argv += ["--config", f'model_reasoning_effort="{invocation.reasoning_effort}"']
    if invocation.sandboxed:
        # workspace-write keeps writes in the workdir (and --add-dir paths);
        # its network switch follows the node's network=.
        access = "true" if invocation.network else "false"
        argv += ["--config", f"sandbox_workspace_write.network_access={access}"]
        for path in invocation.writable:
            argv += ["--add-dir", str(path)]
    return [*argv, *codex_args(invocation.mcp), "-"]


CODEX = AgentCli(
    name="codex",
    executable="codex",
    package="@openai/codex",
    checked_version="0.169.0",
    build_argv=_argv,
    parser=CodexParser,
    turn_flag=False,
    status_command=("login", "status"),
    credential_env=("CODEX_API_KEY",),
    login_hint="run `codex login` or set CODEX_API_KEY",
    command_sandbox="Codex's workspace-write sandbox",
    passed_env=("CODEX_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"),
)
