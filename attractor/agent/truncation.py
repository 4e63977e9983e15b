"""Cutting tool output down to what the model should see.

Characters are cut first, because a single enormous line would pass any line
limit; lines second, for readability. Each cut leaves a note in the text that
says how much was removed and where the full output is.
"""

from __future__ import annotations

from attractor.valueclass import frozen


@frozen
class Limits:
    """How much of one tool's output the model sees."""

    max_chars: int
    max_lines: int | None = None


DEFAULT_LIMITS = Limits(max_chars=20_000, max_lines=400)
TOOL_LIMITS: dict[str, Limits] = {
    "read_file": Limits(50_000),
    "shell": Limits(30_000, 256),
    "read_many_files": Limits(80_000),
    "search_file": Limits(20_000, 250),
    "grep": Limits(20_000, 250),
    "glob": Limits(20_000, 500),
    "list_dir": Limits(20_000, 500),
    "edit_file": Limits(10_000),
    "apply_patch": Limits(10_000),
    "spawn_agent": Limits(20_000),
    "write_file": Limits(1_000),
}

_WHERE = "the full output is in the node's tools.log"


def limits_for(tool: str) -> Limits:
    return TOOL_LIMITS.get(tool, DEFAULT_LIMITS)


def truncate_output(text: str, limits: Limits) -> str:
    """``text`` cut by characters, then by lines, keeping its head and tail."""
    return truncate_lines(truncate_chars(text, limits.max_chars), limits.max_lines)


def truncate_chars(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    head = max_chars // 2
    tail = max_chars - head
    removed = len(text) - max_chars
    note = (
        f"\n[output truncated: {removed} characters removed from the middle; {_WHERE}. "
        "Use a narrower command, offset/limit or a search to see a specific part.]\n"
    )
    return text[:head] + note + text[len(text) - tail :]


def truncate_lines(text: str, max_lines: int | None) -> str:
    if max_lines is None:
        return text
    lines = text.split("\n")
    if len(lines) <= max_lines:
        return text
    head = max_lines // 2
    tail = max_lines - head
    omitted = len(lines) - max_lines
    note = f"[output truncated: {omitted} lines omitted; {_WHERE}]"
    return "\n".join([*lines[:head], note, *lines[len(lines) - tail :]])
