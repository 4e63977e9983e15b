"""Keeping a long conversation inside the model's context window.

Before each request the conversation's size is estimated at about four
characters per token. Once it passes :data:`COMPACT_AT` of the window, the
oldest tool outputs are replaced by a short note, oldest first, until the
estimate is back under :data:`COMPACT_TO`. The outputs of the latest tool round
are never touched, nor is anything but tool output: the model keeps its
instructions, its own reasoning and the calls it made. What was dropped is
returned so the session can record it in the transcript; the full outputs stay
in the node's tools.log.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import replace

from attractor.llm.types import Message
from attractor.valueclass import frozen

CHARS_PER_TOKEN = 4
COMPACT_AT = 0.8
COMPACT_TO = 0.5
MARK = "[tool output compacted to save context"


@frozen
class Dropped:
    """One tool output that was replaced."""

    tool: str
    call_id: str
    chars: int

    def to_json(self) -> dict[str, object]:
        return {"tool": self.tool, "call_id": self.call_id, "chars": self.chars}


@frozen
class Compaction:
    """One compaction: the estimates before and after, and what was dropped."""

    window: int
    tokens_before: int
    tokens_after: int
    dropped: tuple[Dropped, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "context_window": self.window,
            "estimated_tokens_before": self.tokens_before,
            "estimated_tokens_after": self.tokens_after,
            "dropped": [d.to_json() for d in self.dropped],
        }

    def summary(self) -> str:
        share = round(100 * self.tokens_before / self.window)
        chars = sum(d.chars for d in self.dropped)
        return (
            f"the conversation reached about {share}% of the {self.window}-token context "
            f"window; {len(self.dropped)} old tool output(s) ({chars} characters) were "
            "compacted"
        )


_SIZE: Callable[[Message], int] = operator.attrgetter("size")


def estimate_tokens(messages: Sequence[Message]) -> int:
    """About how many tokens ``messages`` take (four characters per token)."""
    # ``size`` is cached on each message; ``map`` keeps the loop out of Python code.
    return sum(map(_SIZE, messages)) // CHARS_PER_TOKEN


def _note(chars: int) -> str:
    return (
        f"{MARK}: {chars} characters dropped; the full output is in the node's "
        "tools.log. Run the tool again if you need it.]"
    )


def _latest_round(messages: Sequence[Message]) -> int:
    """Index of the last assistant message: tool results after it are kept."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            return index
    return len(messages)


class SizeTally:
    """A conversation's size in characters, counting only what changed since the last
    count: a session's conversation grows by a few messages a turn, so summing
    every message again would make each turn cost more than the one before."""

    def __init__(self) -> None:
        self._seen: tuple[Message, ...] = ()
        self._chars = 0

    def tokens(self, messages: Sequence[Message]) -> int:
        """What :func:`estimate_tokens` says of ``messages``."""
        seen = self._seen
        # The very objects of the last count open ``messages`` (compared in C): add the rest.
        if len(messages) >= len(seen) and all(map(operator.is_, seen, messages)):
            self._chars += sum(map(_SIZE, messages[len(seen) :]))
        else:
            self._chars = sum(map(_SIZE, messages))
        self._seen = tuple(messages)
        return self._chars // CHARS_PER_TOKEN


def compact(
    messages: list[Message], window: int, tally: SizeTally | None = None
) -> Compaction | None:
    """Compact ``messages`` in place when they near ``window`` tokens; what was done.

    ``tally`` keeps the size between calls on one growing conversation.
    """
    estimate = (tally or SizeTally()).tokens
    before = estimate(messages)
    if window <= 0 or before <= COMPACT_AT * window:
        return None
    target = COMPACT_TO * window * CHARS_PER_TOKEN
    total = before * CHARS_PER_TOKEN
    dropped: list[Dropped] = []
    for index in range(_latest_round(messages)):
        if total <= target:
            break
        message = messages[index]
        if message.role != "tool" or message.content.startswith(MARK):
            continue
        note = _note(len(message.content))
        if len(note) >= len(message.content):
            continue
        total -= len(message.content) - len(note)
        dropped.append(
            Dropped(message.name or "", message.tool_call_id or "", len(message.content))
        )
        messages[index] = replace(message, content=note)
    return Compaction(window, before, estimate(messages), tuple(dropped))
