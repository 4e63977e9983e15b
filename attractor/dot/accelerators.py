"""Accelerator keys of human-gate choices: ``[A] Approve``, ``A) Approve``, ``A - Approve``.

Shared by the human gate (which matches answers to choices) and lint (which
checks that no two choices of one gate share a key).
"""

from __future__ import annotations

import re

_ACCELERATOR = (
    re.compile(r"^\s*\[(\w)\]\s*(.*)$"),
    re.compile(r"^\s*(\w)\)\s*(.*)$"),
    re.compile(r"^\s*(\w)\s+-\s+(.*)$"),
)


def accelerator_key(label: str) -> str:
    """The shortcut key of ``[K] Label``, ``K) Label``, ``K - Label``, else the first character."""
    for pattern in _ACCELERATOR:
        match = pattern.match(label)
        if match:
            return match.group(1).upper()
    stripped = label.strip()
    return stripped[:1].upper()


def strip_accelerator(label: str) -> str:
    """``label`` without its accelerator prefix."""
    for pattern in _ACCELERATOR:
        match = pattern.match(label)
        if match:
            return match.group(2).strip()
    return label.strip()
