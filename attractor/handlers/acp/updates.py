"""ACP session updates as the steps of an agent-CLI stream.

The :class:`~attractor.handlers.external.tracker.Tracker` of the CLI backends
then numbers turns, writes transcript.jsonl and tools.log, emits the agent
events and spends the run budget, exactly as for Claude Code or Codex.

ACP reports no model request as such, so a turn is counted the way a model
works: the agent's output (message, thought or tool call) after the results
of its tool calls came back begins a new turn, as does each prompt. An agent
that runs the tool calls of one answer one after the other is counted a turn
per call: never fewer turns than it took.
"""

from __future__ import annotations

import json
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    PromptResponse,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from attractor.handlers.external.steps import (
    Finished,
    Said,
    Step,
    TokensUsed,
    ToolDone,
    ToolUsed,
    TurnStarted,
)

#: A tool call's statuses that mean its result is in.
_DONE = ("completed", "failed")
#: How each stop reason of a prompt turn ends the session.
_ENDINGS: dict[str, Finished] = {
    "end_turn": Finished("success"),
    "max_turn_requests": Finished("max_turns"),
    "max_tokens": Finished("error", message="the agent ran out of output tokens (max_tokens)"),
    "refusal": Finished("error", message="the agent refused to continue (refusal)"),
    "cancelled": Finished("error", message="the agent cancelled the turn"),
}


class UpdateReader:
    """Turns one session's updates into steps (see the module docstring)."""

    def __init__(self) -> None:
        self._turn_open = False
        #: Each tool call's kind, by id (a permission request may omit it).
        self.kinds: dict[str, str] = {}
        #: Each tool call's raw input, by id (what a permission request is about).
        self.inputs: dict[str, Any] = {}

    def new_prompt(self) -> None:
        """The next output belongs to a new turn."""
        self._turn_open = False

    def steps(self, update: Any) -> list[Step]:
        if isinstance(update, AgentMessageChunk):
            block = update.content
            text = block.text if isinstance(block, TextContentBlock) else ""
            return self._output(Said(text, fragment=True)) if text else self._output()
        if isinstance(update, AgentThoughtChunk):
            return self._output()
        if isinstance(update, ToolCallStart):
            self.kinds[update.tool_call_id] = update.kind or "other"
            if update.raw_input is not None:
                self.inputs[update.tool_call_id] = update.raw_input
            used = ToolUsed(update.tool_call_id, update.title, _arguments(update.raw_input))
            steps = self._output(used)
            if update.status in _DONE:
                steps += self._done(update)
            return steps
        if isinstance(update, ToolCallProgress):
            if update.kind:
                self.kinds[update.tool_call_id] = update.kind
            if update.raw_input is not None:
                self.inputs[update.tool_call_id] = update.raw_input
            return self._done(update) if update.status in _DONE else []
        return []

    def _output(self, *steps: Step) -> list[Step]:
        if self._turn_open:
            return list(steps)
        self._turn_open = True
        return [TurnStarted(), *steps]

    def _done(self, update: ToolCallStart | ToolCallProgress) -> list[Step]:
        # The agent's next output answers these results: it is a new model request.
        self._turn_open = False
        output = _output_text(update)
        return [ToolDone(update.tool_call_id, output, is_error=update.status == "failed")]


def prompt_ended(response: PromptResponse) -> list[Step]:
    """The steps of a prompt turn's answer: its token usage and how it ended."""
    steps: list[Step] = []
    usage = response.usage
    if usage is not None:
        steps.append(
            TokensUsed(
                usage.input_tokens,
                usage.output_tokens,
                cache_read_tokens=usage.cached_read_tokens or 0,
                cache_write_tokens=usage.cached_write_tokens or 0,
            )
        )
    steps.append(_ENDINGS.get(response.stop_reason, Finished("error", message="unknown stop")))
    return steps


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    return {} if raw is None else {"input": raw}


def _output_text(update: ToolCallStart | ToolCallProgress) -> str:
    """What a finished tool call produced: its text content, else its raw output."""
    parts: list[str] = []
    for item in update.content or []:
        if isinstance(item, ContentToolCallContent) and isinstance(item.content, TextContentBlock):
            parts.append(item.content.text)
        elif isinstance(item, FileEditToolCallContent):
            parts.append(f"edited {item.path}")
        elif isinstance(item, TerminalToolCallContent):
            parts.append(f"terminal {item.terminal_id}")
    if parts:
        return "\n".join(parts)
    raw = update.raw_output
    if raw is None:
        return ""
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)
