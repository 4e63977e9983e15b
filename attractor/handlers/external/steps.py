"""What an agent CLI's event stream says, in one vocabulary for every CLI.

Each adapter's parser turns one JSON line of its CLI's stream into a list of
these steps; :mod:`attractor.handlers.external.tracker` turns the steps into
attractor's events and files. A parser never raises on a line it does not
understand: an unknown event is simply no step.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal, Protocol

from attractor.valueclass import frozen


@frozen
class TurnStarted:
    """The agent made one more model request (one turn of our budget)."""


@frozen
class Said:
    """Text the model wrote in the current turn.

    ``fragment`` marks a streamed piece that continues the previous text;
    otherwise it is a block of its own (joined with a blank line).
    """

    text: str
    fragment: bool = False


@frozen
class ToolUsed:
    """The model called a tool."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@frozen
class ToolDone:
    """A tool call finished (``id`` matches the :class:`ToolUsed`)."""

    id: str
    output: str
    is_error: bool = False


@frozen
class TokensUsed:
    """Token counts; ``total`` says they cover the whole run, not one turn."""

    input_tokens: int
    output_tokens: int
    total: bool = False
    cost_usd: float | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@frozen
class Failed:
    """The CLI reported an error (``auth`` when it is not logged in)."""

    message: str
    auth: bool = False


#: How the CLI said its run ended.
Ending = Literal["success", "error", "max_turns"]


@frozen
class Finished:
    """The CLI's final result; ``text`` is its final answer when it gives one."""

    ending: Ending
    text: str = ""
    message: str = ""


Step = TurnStarted | Said | ToolUsed | ToolDone | TokensUsed | Failed | Finished


class StreamParser(Protocol):
    """Turns one decoded JSON line of a CLI's stream into steps."""

    def feed(self, event: dict[str, Any]) -> list[Step]: ...


def as_int(value: Any) -> int:
    """A token count from a stream field (missing or odd values count as 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_text(value: Any) -> str:
    """Tool output or message content as text, whatever shape the CLI sent."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [item.get("text", "") if isinstance(item, dict) else str(item) for item in value]
        return "".join(p for p in parts if isinstance(p, str))
    return str(value)
