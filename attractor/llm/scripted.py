"""The scripted model: deterministic replies from a JSON file, for tests and demos.

``--backend scripted:FILE`` reads::

    {"responses": [{"text": "...", "tool_calls": [{"name": "read_file",
                    "arguments": {"path": "a.txt"}}]}, ...],
     "then": "repeat_last"}

One response is consumed per model request, across the whole run, in order.
When the list is used up, ``repeat_last`` repeats the final response forever (a
model that never stops calling tools) and ``stop`` answers with plain text.
Every request is kept in :attr:`ScriptedModel.requests` exactly as a real
model would receive it (and appended to ``record_path`` as JSON lines if set).
"""

from __future__ import annotations

import errno
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from attractor.errors import InputFileError, UsageError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import TEXT_LIMIT, read_bounded
from attractor.llm.types import Message, ModelRequest, ModelResponse, ToolCall, Usage
from attractor.valueclass import frozen

Then = Literal["repeat_last", "stop"]
STOP_TEXT = "The scripted responses are used up; stopping here."


@frozen
class ScriptedResponse:
    """One scripted reply: text, tool calls (name and arguments) and optional usage."""

    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    usage: Usage | None = None


class ScriptedModel:
    """A :class:`~attractor.llm.types.Model` that replays scripted responses."""

    def __init__(
        self,
        responses: Sequence[ScriptedResponse],
        *,
        then: Then = "stop",
        record_path: Path | None = None,
    ) -> None:
        if then == "repeat_last" and not responses:
            raise ValueError("repeat_last needs at least one response")
        self.responses = list(responses)
        self.then = then
        self.record_path = record_path
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_file(cls, path: Path, *, record_path: Path | None = None) -> ScriptedModel:
        """Load a script; any problem is a :class:`UsageError` naming the file."""
        responses, then = load_script(path)
        return cls(responses, then=then, record_path=record_path)

    @property
    def provider(self) -> str:
        return "scripted"

    @property
    def name(self) -> str:
        return "scripted"

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Record ``request`` and answer with the next scripted response."""
        index = len(self.requests)
        self.requests.append(request)
        if self.record_path is not None:
            with self.record_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(request_to_json(request), ensure_ascii=False) + "\n")
        scripted = self._pick(index)
        if scripted is None:
            return ModelResponse(text=STOP_TEXT, model=self.name, provider=self.provider)
        calls = tuple(
            ToolCall(id=f"call_{index + 1}_{n}", name=name, arguments=dict(arguments))
            for n, (name, arguments) in enumerate(scripted.tool_calls, start=1)
        )
        return ModelResponse(
            text=scripted.text,
            tool_calls=calls,
            usage=scripted.usage,
            finish_reason="tool_calls" if calls else "stop",
            model=self.name,
            provider=self.provider,
        )

    def _pick(self, index: int) -> ScriptedResponse | None:
        if index < len(self.responses):
            return self.responses[index]
        return self.responses[-1] if self.then == "repeat_last" else None

    async def aclose(self) -> None:
        return None


def message_to_json(message: Message) -> dict[str, Any]:
    """A message as plain JSON (what the recorded requests file holds)."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
        data["is_error"] = message.is_error
    return data


def request_to_json(request: ModelRequest) -> dict[str, Any]:
    return {
        "messages": [message_to_json(m) for m in request.messages],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ],
        "tool_choice": request.tool_choice,
        "reasoning_effort": request.reasoning_effort,
    }


# -- loading ------------------------------------------------------------------------


class _Bad(Exception):
    """A problem inside the script; becomes a UsageError naming the file."""


def load_script(path: Path) -> tuple[list[ScriptedResponse], Then]:
    """Parse a script file into responses and the ``then`` policy."""
    what = "scripted backend file"
    try:
        data = loads_json(read_bounded(path, TEXT_LIMIT, what), path, what)
    except InputFileError as error:
        if error.errno == errno.ENOENT:
            raise UsageError(f"{what} {path}: no such file") from None
        raise UsageError(f"{what} {path}: {error.reason}; {error.hint}") from None
    except json.JSONDecodeError as error:
        raise UsageError(
            f"scripted backend file {path}: not valid JSON: {error.msg} "
            f"at line {error.lineno}, column {error.colno}"
        ) from None
    try:
        return _parse_script(data)
    except _Bad as error:
        raise UsageError(f"scripted backend file {path}: {error}") from None


def _parse_script(data: Any) -> tuple[list[ScriptedResponse], Then]:
    if not isinstance(data, dict):
        raise _Bad('expected a JSON object like {"responses": [...], "then": "stop"}')
    _no_unknown(data, {"responses", "then"}, "the top level")
    then = data.get("then", "stop")
    if then not in ("repeat_last", "stop"):
        raise _Bad(f'"then" must be "repeat_last" or "stop", not {json.dumps(then)}')
    raw = data.get("responses")
    if not isinstance(raw, list):
        raise _Bad('"responses" must be a list of response objects')
    responses = [_parse_response(item, n) for n, item in enumerate(raw, start=1)]
    if then == "repeat_last" and not responses:
        raise _Bad('"then": "repeat_last" needs at least one response')
    return responses, then


def _parse_response(item: Any, n: int) -> ScriptedResponse:
    where = f"response {n}"
    if not isinstance(item, dict):
        raise _Bad(f'{where} must be an object with "text" and/or "tool_calls"')
    _no_unknown(item, {"text", "tool_calls", "usage"}, where)
    text = item.get("text", "")
    if not isinstance(text, str):
        raise _Bad(f'{where}: "text" must be a string')
    calls = item.get("tool_calls", [])
    if not isinstance(calls, list):
        raise _Bad(f'{where}: "tool_calls" must be a list')
    return ScriptedResponse(
        text=text,
        tool_calls=tuple(_parse_call(c, f"{where}, tool call {i}") for i, c in enumerate(calls, 1)),
        usage=_parse_usage(item.get("usage"), where),
    )


def _parse_call(call: Any, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(call, dict):
        raise _Bad(f'{where} must be an object with "name" and "arguments"')
    _no_unknown(call, {"name", "arguments"}, where)
    name = call.get("name")
    arguments = call.get("arguments", {})
    if not isinstance(name, str) or not name:
        raise _Bad(f'{where}: "name" must be a non-empty string')
    if not isinstance(arguments, dict):
        raise _Bad(f'{where}: "arguments" must be an object')
    return name, arguments


_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def _parse_usage(usage: Any, where: str) -> Usage | None:
    if usage is None:
        return None
    if not isinstance(usage, dict) or not all(
        isinstance(usage.get(k, 0), int) and not isinstance(usage.get(k, 0), bool)
        for k in _USAGE_KEYS
    ):
        raise _Bad(f'{where}: "usage" must be {{"input_tokens": N, "output_tokens": N}}')
    _no_unknown(usage, set(_USAGE_KEYS), f'{where} "usage"')
    return Usage(*(int(usage.get(k, 0)) for k in _USAGE_KEYS))


def _no_unknown(data: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise _Bad(f"unknown key(s) in {where}: {', '.join(unknown)}; allowed: {sorted(allowed)}")
