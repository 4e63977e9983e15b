"""Adaptive turn allocation for ``max_turns="auto"``.

A prompt starts with :data:`BASE` turns and earns extra turns for each kind of
demanding work it clearly asks for. The patterns are deliberately narrow: a
bare "refactor", "fix the typo" or "build docs" earns nothing, because a false
positive costs real money on every run while a missed one only means the
author should set ``max_turns`` by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BASE = 15
CAP = 50
REENTRY_BONUS = 5

_ARTICLE = r"(?:(?:a|an|the|this|that|our|my|your|its|these|those)\s+)?"
# Up to two qualifying words ("payment", "user-facing") between a verb and its object.
_WORDS = r"(?:[\w-]+\s+){0,2}?"
_SYSTEMISH = r"(?:system|api|codebase|code\s+base|architecture|service|backend|application)s?"

_MAJOR_WORK = (
    rf"\bimplement(?:s|ing)?\s+{_ARTICLE}new\s+",
    rf"\bimplement(?:s|ing)?\s+{_ARTICLE}{_WORDS}feature\b",
    rf"\b(?:build|create|develop|write)(?:s|ing)?\s+{_ARTICLE}(?:new\s+)?{_WORDS}"
    r"(?:api|rest\s+api|service|microservice|backend|server)s?\b",
    r"\bmigrat(?:e|es|ing)\s+(?:[\w./-]+\s+){0,4}?(?:to|onto)\s+\w",
    rf"\b(?:redesign|re-architect|rearchitect)(?:s|ing)?\s+{_ARTICLE}{_WORDS}{_SYSTEMISH}\b",
)

_PATTERNS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("major_work", 10, _MAJOR_WORK),
    (
        "refactoring",
        10,
        (rf"\brefactor(?:s|ing)?\s+{_ARTICLE}(?:(?:entire|whole)\s+)?{_WORDS}{_SYSTEMISH}\b",),
    ),
    (
        "debugging",
        5,
        (
            rf"\bfix(?:es|ing)?\s+{_ARTICLE}{_WORDS}"
            r"(?:bug|error|crash|exception|regression|memory\s+leak|deadlock|race\s+condition)s?\b",
            rf"\bdebug(?:s|ging)?\s+{_ARTICLE}{_WORDS}"
            r"(?:issue|error|bug|crash|failure|problem|exception)s?\b",
        ),
    ),
    (
        "multi_step",
        5,
        (
            # "First ..., then ..." at the start of a sentence, not "the first line, then".
            r"(?:^|[.;:!?]\s+|\n\s*)first\b,?\s+[^\n]{1,300}?\bthen\b",
            r"\bstep\s*1\b[\s\S]{1,2000}?\bstep\s*2\b",
        ),
    ),
    (
        "whole_codebase_analysis",
        5,
        (
            r"\b(?:analy[sz]e|audit|review|survey|map\s+out)(?:s|ing)?\s+(?:the\s+)?"
            r"(?:(?:entire|whole|full|complete)\s+)?(?:codebase|code\s+base|repository|repo)\b",
            r"\b(?:analy[sz]e|audit|review|survey)(?:s|ing)?\s+(?:the\s+)?(?:entire|whole)\s+"
            r"(?:system|project|application)\b",
        ),
    ),
)

_COMPILED = tuple(
    (name, bonus, tuple(re.compile(p, re.IGNORECASE) for p in patterns))
    for name, bonus, patterns in _PATTERNS
)


@dataclass(frozen=True)
class AutoAllocation:
    """The turns allocated for a prompt and the names of the patterns that matched."""

    turns: int
    patterns: tuple[str, ...]


def matched_patterns(prompt: str) -> list[tuple[str, int]]:
    """The ``(name, bonus)`` of every task pattern the prompt matches."""
    return [
        (name, bonus)
        for name, bonus, regexes in _COMPILED
        if any(r.search(prompt) for r in regexes)
    ]


def allocate(prompt: str, *, visit: int = 1) -> AutoAllocation:
    """Turns for ``prompt`` on the ``visit``-th entry of its node (1 = first).

    Re-entering a node means earlier attempts did not settle the task, so it
    gets :data:`REENTRY_BONUS` more turns from the second visit and again from
    the fourth. The total never exceeds :data:`CAP`.
    """
    found = matched_patterns(prompt)
    if visit >= 2:
        found.append(("reentry", REENTRY_BONUS))
    if visit >= 4:
        found.append(("repeated_reentry", REENTRY_BONUS))
    total = BASE + sum(bonus for _, bonus in found)
    return AutoAllocation(min(total, CAP), tuple(name for name, _ in found))
