"""Gemini CLI (``gemini``, npm ``@google/gemini-cli``, checked at 0.61.0).

Started as ``gemini --output-format stream-json --approval-mode yolo
--skip-trust`` with the prompt on stdin (a non-terminal stdin makes it
headless). It has no turn flag (only ``maxSessionTurns`` in settings.json), so
attractor counts turns and stops it at the limit. The stream:

- ``{"type": "init", "session_id", "model"}``;
- ``{"type": "message", "role": "user" | "assistant", "content", "delta"}``;
- ``{"type": "tool_use", "tool_name", "tool_id", "parameters"}``;
- ``{"type": "tool_result", "tool_id", "status": "success" | "error", "output",
  "error": {"type", "message"}}``;
- ``{"type": "error", "severity": "warning" | "error", "message"}``;
- ``{"type": "result", "status": "success" | "error", "error": {...},
  "stats": {total_tokens, input_tokens, output_tokens, cached, duration_ms,
  tool_calls}}``.

Without credentials it prints an auth message on stderr and exits 41. One of
our turns is one model response: the messages and tool calls between two
batches of tool results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attractor.handlers.external.mcp import gemini_env
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


class GeminiParser:
    """Steps from ``gemini --output-format stream-json`` lines."""

    def __init__(self) -> None:
        self._new_turn = True

    def feed(self, event: dict[str, Any]) -> list[Step]:
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            text = as_text(event.get("content"))
            return [*self._turn(), Said(text, fragment=True)] if text else self._turn()
        if kind == "tool_use":
            arguments = event.get("parameters")
            call = ToolUsed(
                str(event.get("tool_id", "")),
                str(event.get("tool_name", "tool")),
                arguments if isinstance(arguments, dict) else {},
            )
            return [*self._turn(), call]
        if kind == "tool_result":
            self._new_turn = True
            return [_tool_done(event)]
        if kind == "error" and event.get("severity") == "error":
            return [Failed(as_text(event.get("message")))]
        if kind == "result":
            return self._result(event)
        return []

    def _turn(self) -> list[Step]:
        if not self._new_turn:
            return []
        self._new_turn = False
        return [TurnStarted()]

    def _result(self, event: dict[str, Any]) -> list[Step]:
        stats = event.get("stats")
        stats = stats if isinstance(stats, dict) else {}
        tokens = TokensUsed(
            as_int(stats.get("input_tokens")), as_int(stats.get("output_tokens")), total=True
        )
        if event.get("status") == "success":
            return [tokens, Finished("success", "")]
        error = event.get("error")
        message = as_text(error.get("message") if isinstance(error, dict) else error)
        return [tokens, Finished("error", "", message or "gemini reported an error")]


def _tool_done(event: dict[str, Any]) -> ToolDone:
    failed = event.get("status") == "error"
    output = as_text(event.get("output"))
    error = event.get("error")
    if failed and not output and isinstance(error, dict):
        output = as_text(error.get("message"))
    return ToolDone(str(event.get("tool_id", "")), output, failed)


def _logged_in(home: Path) -> bool:
    """A login chosen in ``~/.gemini/settings.json`` (its ``/auth`` choice)."""
    try:
        settings = json.loads((home / ".gemini" / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(settings, dict):
        return False
    security = settings.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    chosen = auth.get("selectedType") if isinstance(auth, dict) else None
    return bool(chosen or settings.get("selectedAuthType"))


def _argv(invocation: Invocation) -> list[str]:
    argv = ["gemini", "--output-format", "stream-json", "--approval-mode", "yolo", "--skip-trust"]
    if invocation.model:
        argv += ["--model", invocation.model]
    return argv


GEMINI = AgentCli(
    name="gemini-cli",
    executable="gemini",
    package="@google/gemini-cli",
    checked_version="0.61.0",
    build_argv=_argv,
    parser=GeminiParser,
    turn_flag=False,
    credential_env=(
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
    ),
    login_file=_logged_in,
    mcp_env=gemini_env,
    auth_exit_code=41,  # FatalAuthenticationError
    passed_env=(
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GEMINI_CLI_HOME",
    ),
    login_hint=(
        "set GEMINI_API_KEY, or run `gemini` once and choose a login (/auth), "
        "which records it in ~/.gemini/settings.json"
    ),
)
