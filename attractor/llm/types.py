"""Provider-neutral message types and the :class:`Model` interface.

The agent loop speaks only these types. Each provider adapter (and the scripted
backend) translates them to and from its own wire format.
"""

from __future__ import annotations

import json
from dataclasses import field
from functools import cached_property
from typing import Any, Literal, Protocol, runtime_checkable

from attractor.valueclass import frozen

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error", "other"]
ToolChoice = Literal["auto", "none", "required"]


@frozen
class ToolCall:
    """One tool call requested by the model, with its arguments already parsed.

    ``arguments_error`` is set when the model sent arguments that are not a JSON
    object; the agent loop reports it back to the model instead of running the tool.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    arguments_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The transcript form: ``{name, arguments}``."""
        return {"name": self.name, "arguments": self.arguments}

    # Each request resends the whole conversation: what is worked out from a call
    # or a message is worked out once, so a turn's cost does not grow with the
    # number of turns before it (the fields never change).
    @cached_property
    def arguments_json(self) -> str:
        """``arguments`` as JSON text (``json.dumps`` defaults), encoded once."""
        return json.dumps(self.arguments)

    @cached_property
    def size(self) -> int:
        """Characters of the name and of ``str(arguments)``, counted once."""
        return len(self.name) + len(str(self.arguments))


@frozen
class Message:
    """One conversation message. Build them with the classmethods."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    @cached_property
    def size(self) -> int:
        """Characters of the content and the tool calls, counted once."""
        return len(self.content) + sum(call.size for call in self.tool_calls)

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", text)

    @classmethod
    def assistant(cls, text: str, tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls("assistant", text, tool_calls=tool_calls)

    @classmethod
    def tool(cls, call: ToolCall, content: str, *, is_error: bool = False) -> Message:
        return cls("tool", content, tool_call_id=call.id, name=call.name, is_error=is_error)


@frozen
class ToolDefinition:
    """A tool offered to the model: name, description and JSON schema of arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@frozen
class Usage:
    """Token counts and cost of one request (or a sum of requests).

    ``input_tokens`` counts the whole prompt, cached parts included;
    ``cache_read_tokens`` and ``cache_write_tokens`` say how much of it was read
    from or written to the provider's prompt cache. ``output_tokens`` includes
    ``reasoning_tokens`` (the model's hidden thinking). ``cost`` is in US dollars,
    None when no price is known for the model.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost = self.cost
        if other.cost is not None:
            cost = other.cost if cost is None else cost + other.cost
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            cost,
        )

    def beyond(self, other: Usage) -> Usage:
        """What this sum holds on top of ``other`` (each count at least zero).

        ``cost`` stays None when this sum has none.
        """
        cost = None if self.cost is None else max(0.0, self.cost - (other.cost or 0.0))
        return Usage(
            max(0, self.input_tokens - other.input_tokens),
            max(0, self.output_tokens - other.output_tokens),
            max(0, self.cache_read_tokens - other.cache_read_tokens),
            max(0, self.cache_write_tokens - other.cache_write_tokens),
            max(0, self.reasoning_tokens - other.reasoning_tokens),
            cost,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Usage:
        """The inverse of :meth:`to_json`; missing or malformed counts are zero."""

        def count(key: str) -> int:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        cost = data.get("cost")
        if isinstance(cost, bool) or not isinstance(cost, int | float):
            cost = None
        return cls(
            count("input_tokens"),
            count("output_tokens"),
            count("cache_read_tokens"),
            count("cache_write_tokens"),
            count("reasoning_tokens"),
            None if cost is None else float(cost),
        )

    def to_json(self) -> dict[str, Any]:
        """Every count, and ``cost`` (rounded to micro-dollars) when it is known."""
        data: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }
        if self.cost is not None:
            data["cost"] = round(self.cost, 6)
        return data


@frozen
class ModelRequest:
    """Everything one model request carries.

    ``tools`` empty means tools are withheld: adapters must then send no tool
    definitions at all, so the model can only answer in text.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice = "auto"
    reasoning_effort: str | None = None
    max_tokens: int | None = None


@frozen
class ModelResponse:
    """What came back from one model request.

    ``notes`` carries adapter remarks worth a debug event (for example a
    ``reasoning_effort`` the model does not support and that was ignored).
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    finish_reason: FinishReason = "stop"
    model: str = ""
    provider: str = ""
    notes: tuple[str, ...] = ()


@runtime_checkable
class Model(Protocol):
    """The one interface the agent loop uses to talk to any model."""

    @property
    def provider(self) -> str:
        """Provider key: ``openai``, ``anthropic``, ``scripted``..."""
        ...

    @property
    def name(self) -> str:
        """Provider-native model id."""
        ...

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one request; raises :class:`attractor.errors.LLMError` subclasses."""
        ...

    async def aclose(self) -> None:
        """Release connections. Safe to call more than once."""
        ...
