"""Formatting: indentation by nesting and a comma between attribute items.

attractor has no canonical printer (``attractor fmt``) yet, so formatting only
re-indents lines (four spaces per ``{`` or ``[`` level), drops trailing blanks
and puts the documented ``,`` between the items of an attribute list. Strings
and comments are copied as written, including multi-line prompts.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*"?)'
    r"|(?P<comment>//[^\n]*|/\*[\s\S]*?(?:\*/|$)|(?m:^[ \t]*#[^\n]*))"
    r"|(?P<newline>\n)|(?P<space>[ \t\r]+)|(?P<open>[{\[])|(?P<close>[}\]])"
    r"|(?P<punct>->|[=,;])|(?P<word>[^\s\"{}\[\]=,;]+)"
)
INDENT = "    "


def format_text(text: str) -> str:
    """``text`` re-indented, with commas between attribute items."""
    lines: list[list[str]] = [[]]
    starts: list[int] = [0]  # nesting depth at the start of each line
    closes: list[bool] = [False]  # the line starts with a closer
    depth, brackets = 0, 0
    value_at: tuple[int, int] | None = None  # where a list item's value ended
    after_equals = False
    for match in _TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        line = lines[-1]
        if kind == "newline":
            lines.append([])
            starts.append(depth)
            closes.append(False)
            continue
        if kind == "space":
            if line:  # leading blanks are the indentation, worked out below
                line.append(" " if brackets else token.replace("\r", ""))
            continue
        if kind == "comment" and not line:
            token = token.lstrip()
        if not line and kind == "close":
            closes[-1] = True
        if kind == "open":
            depth += 1
            brackets += token == "["
        elif kind == "close":
            depth = max(0, depth - 1)
            brackets = max(0, brackets - (token == "]"))
            value_at = None
        if brackets and kind in ("word", "string"):
            if after_equals:
                after_equals = False
                line.append(token)
                value_at = (len(lines) - 1, len(line))
                continue
            if value_at is not None:  # a key right after a value: a comma goes between
                row, col = value_at
                lines[row].insert(col, ",")
                line = lines[-1]
            value_at = None
        elif kind == "punct" and token in ",;":
            value_at = None
        after_equals = kind == "punct" and token == "="
        line.append(token)
    out = []
    for tokens, depth_at, closing in zip(lines, starts, closes, strict=True):
        body = "".join(tokens).rstrip()
        level = max(0, depth_at - closing)
        out.append(INDENT * level + body if body else "")
    return "\n".join(out)
