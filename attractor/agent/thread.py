"""A conversation as JSON: what a ``full``-fidelity thread keeps between sessions.

A thread holds the user, assistant and tool messages of the sessions that
shared it, never a system prompt: each session writes its own (its workdir,
budget and tools differ) and continues the thread after it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from attractor.llm.types import Message, Role, ToolCall

_ROLES: frozenset[str] = frozenset({"user", "assistant", "tool"})


class ThreadFormatError(ValueError):
    """A saved thread that is not a list of messages as :func:`dump` writes them."""


def dump(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The JSON form of a conversation, system messages left out."""
    return [_message_json(m) for m in messages if m.role != "system"]


def load(data: object) -> tuple[Message, ...]:
    """The conversation :func:`dump` wrote.

    Raises:
        ThreadFormatError: ``data`` is not such a list (the message says where).
    """
    if not isinstance(data, list):
        raise ThreadFormatError("a thread is a JSON list of messages")
    return tuple(_message(item, index) for index, item in enumerate(data))


def _message_json(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {"id": call.id, "name": call.name, "arguments": call.arguments}
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
        data["name"] = message.name
    if message.is_error:
        data["is_error"] = True
    return data


def _message(item: object, index: int) -> Message:
    if not isinstance(item, dict) or item.get("role") not in _ROLES:
        raise ThreadFormatError(f"message {index} has no role user, assistant or tool")
    content = item.get("content", "")
    if not isinstance(content, str):
        raise ThreadFormatError(f"message {index}: content is not text")
    calls = tuple(_tool_call(call, index) for call in item.get("tool_calls") or ())
    call_id = item.get("tool_call_id")
    name = item.get("name")
    return Message(
        cast(Role, item["role"]),
        content,
        tool_calls=calls,
        tool_call_id=str(call_id) if call_id is not None else None,
        name=str(name) if name is not None else None,
        is_error=bool(item.get("is_error", False)),
    )


def _tool_call(call: object, index: int) -> ToolCall:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ThreadFormatError(f"message {index}: a tool call has no name")
    arguments = call.get("arguments")
    if not isinstance(arguments, dict):
        raise ThreadFormatError(f"message {index}: tool call arguments are not an object")
    return ToolCall(id=str(call.get("id", "")), name=call["name"], arguments=arguments)
