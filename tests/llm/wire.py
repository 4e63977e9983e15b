"""Builders for provider wire-format bodies used by the fake servers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from attractor.errors import ProviderError
from attractor.llm.types import (
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolDefinition,
)

READ_FILE = ToolDefinition(
    name="read_file",
    description="Read a text file",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
)


def conversation() -> tuple[Message, ...]:
    """System prompt, a user turn, a tool round trip with two results, then a user turn."""
    first = ToolCall("call_1", "read_file", {"path": "a.txt"})
    second = ToolCall("call_2", "read_file", {"path": "b.txt"})
    return (
        Message.system("You are careful."),
        Message.user("Read both files."),
        Message.assistant("Reading.", (first, second)),
        Message.tool(first, "alpha"),
        Message.tool(second, "no such file", is_error=True),
        Message.user("Now summarise."),
    )


def simple_request(**overrides: Any) -> ModelRequest:
    fields: dict[str, Any] = {"messages": (Message.user("hello"),)}
    fields.update(overrides)
    return ModelRequest(**fields)


def openai_completion(
    text: str | None = "hi",
    *,
    tool_calls: tuple[tuple[str, str, str], ...] = (),
    finish: str = "stop",
    usage: tuple[int, int] = (11, 7),
    model: str = "gpt-test",
) -> dict[str, Any]:
    """A Chat Completions response body; tool_calls are (id, name, raw arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def openai_usage_chunk(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def openai_error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def anthropic_message(
    content: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    usage: tuple[int, int] = (20, 9),
    model: str = "claude-test",
) -> dict[str, Any]:
    """A Messages API response body."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def anthropic_stream(text: str, tool: tuple[str, str, dict[str, Any]]) -> tuple[Any, ...]:
    """The SSE events of a streamed answer: one text block, then one tool_use block."""
    call_id, name, arguments = tool
    raw = json.dumps(arguments)
    half = len(raw) // 2
    start = anthropic_message([], stop_reason="", usage=(30, 1))
    start["stop_reason"] = None
    return (
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            },
        ),
        *(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": part},
                },
            )
            for part in (raw[:half], raw[half:])
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 15},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )


# A wrong --base-url: the server answers 200, but with something else.
NOT_AN_API = [
    pytest.param(b"<html><body>Welcome</body></html>", "text/html", id="html-page"),
    pytest.param(b"hello", "text/plain", id="plain-text"),
    pytest.param(b"<html>oops</html>", "application/json", id="undecodable-json"),
    pytest.param(b'{"status": "ok"}', "application/json", id="other-json"),
]


async def ask_once(model: Model, request: ModelRequest | None = None) -> ModelResponse:
    """Send one request, then close the model whatever happened."""
    try:
        return await model.request(request or simple_request())
    finally:
        await model.aclose()


async def failure_of(
    model: Model, kind: type[ProviderError] = ProviderError, request: ModelRequest | None = None
) -> ProviderError:
    """The error one request ends with (it must raise ``kind``); the model is closed."""
    with pytest.raises(kind) as caught:
        await ask_once(model, request)
    return caught.value
