"""Formatting: the buffer in the canonical form ``attractor fmt`` writes.

The printer is :func:`attractor.dot.formatter.format_source`: four-space
indentation by nesting, ``key=value`` items separated by ``, ``, canonical
names for aliases, ``shape`` and ``type`` first in a one-line list. Strings and
comments are copied as written, including multi-line prompts. A buffer that
does not parse yet is formatted all the same (the printer works on tokens).
"""

from __future__ import annotations

from attractor.dot.formatter import INDENT, format_source

__all__ = ["INDENT", "format_text"]


def format_text(text: str) -> str:
    """``text`` in canonical form; without a final newline when it had none."""
    formatted = format_source(text)
    return formatted if text.endswith("\n") else formatted.removesuffix("\n")
