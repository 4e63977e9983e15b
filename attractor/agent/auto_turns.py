"""Adaptive turn allocation for ``max_turns="auto"``.

A prompt starts with :data:`BASE` turns and earns extra turns for each kind of
demanding work it clearly asks for. The patterns are deliberately narrow: a
bare "refactor", "fix the typo" or "build docs" earns nothing, because a false
positive costs real money on every run while a missed one only means the
author should set ``max_turns`` by hand.
"""

from __future__ import annotations

import re

from attractor.valueclass import frozen

BASE = 15
CAP = 50
REENTRY_BONUS = 5

_ARTICLE = r"(?:(?:a|an|the|this|that|our|my|your|its|these|those)\s+)?"
# Up to two qualifying words ("payment", "user-facing") between a verb and its object.
_WORDS = r"(?:[\w-]+\s+){0,2}?"
_SYSTEMISH = r"(?:system|api|codebase|code\s+base|architecture|service|backend|application)s?"

# The noun ends its phrase: "the payment API" is a system, but "the API docs", "the
# server log", "an api key", "a server-side function" and "the system prompt" name
# something else. So the noun must be followed by the end of the text, punctuation,
# or a word that starts a new phrase ("for orders", "in Go", "to use anyio").
_PHRASE_END = (
    r"(?=[ \t]*(?:$|\n|[.,;:!?)\]\"(]|--?\s|\u2014)|\s+(?:"
    r"for|in|to|with|without|that|which|who|where|when|while|and|or|but|so|then|now|"
    r"using|on|of|from|by|as|at|into|onto|under|behind|over|via|per|around|across|"
    r"like|because|since|instead|before|after|until|if|is|are|should|must|will|"
    r"based|backed|written|built|described|defined|specified|called|named|following"
    r")\b)"
)

# What "implement a new ..." must name to be major work: not "a new test" or
# "new line handling".
_COMPONENT = (
    r"(?:feature|module|component|layer|subsystem|system|service|api|backend|frontend|"
    r"engine|framework|library|pipeline|protocol|algorithm|integration|workflow|plugin|"
    r"parser|compiler|scheduler|cache|endpoint|provider|adapter|driver|storage)s?"
)

# A target worth "migrate ... to": a named technology (capitalised, or a well-known
# lowercase name), a version, or a new framework/library/...; not "a new line" or
# "admin role".
_TECH_NAMES = (
    r"(?:postgres(?:ql)?|mysql|mariadb|sqlite|mongo(?:db)?|redis|kafka|react|vue|angular|"
    r"svelte|django|flask|fastapi|rails|typescript|python|node(?:\.?js)?|rust|kotlin|"
    r"kubernetes|k8s|docker|terraform|graphql|grpc|pydantic|sqlalchemy|pytest|anyio|trio|"
    r"asyncio|esm|webpack|vite|poetry|uv|gradle|maven|aws|gcp|azure)\b"
)
_TECH_TARGET = (
    r"(?:(?:a|an|the)\s+)?(?:"
    r"(?-i:[A-Z])[\w.+#-]*"
    rf"|{_TECH_NAMES}"
    r"|(?:[\w.+-]+\s+)?(?:v\d+(?:\.\d+)*|\d+\.\d+(?:\.\d+)*)\b"
    r"|(?:new|newer|latest|modern)\s+(?:[\w-]+\s+)?(?:version|release|framework|library|"
    r"database|platform|stack|runtime|sdk|orm|engine|toolchain|build\s+system)s?\b"
    r")"
)

# A fault to fix or debug, not text about one: "the error message", "error
# handling docs", "the bug report template", "issue formatting".
_NOT_ABOUT_A_FAULT = (
    r"(?!-|\s+(?:messages?|handling|handlers?|typos?|docs?|documentation|texts?|strings?|"
    r"codes?|pages?|logs?|logging|format(?:s|ting)?|wording|labels?|reports?|templates?|"
    r"class(?:es)?|types?|names?)\b)"
)
_FAULT = r"(?:bug|error|crash|exception|regression|memory\s+leak|deadlock|race\s+condition)s?\b"
_PROBLEM = r"(?:issue|error|bug|crash|failure|problem|exception)s?\b"

# A whole-codebase review for something trivial, or limited to one file, is small.
_NOT_TRIVIAL = (
    r"(?!\s+for\s+(?:[\w-]+\s+){0,2}?(?:typos?|spelling|grammar|whitespace|formatting)\b)"
    r"(?![^.\n]*\b(?:in|to)\s+(?:one|a\s+single|this|that)\s+file\b)"
)
_WHOLE = r"(?:(?:entire|whole|full|complete)\s+)"

_MAJOR_WORK = (
    rf"\bimplement(?:s|ing)?\s+{_ARTICLE}new\s+{_WORDS}{_COMPONENT}{_PHRASE_END}",
    rf"\bimplement(?:s|ing)?\s+{_ARTICLE}{_WORDS}feature\b",
    rf"\b(?:build|create|develop|write)(?:s|ing)?\s+{_ARTICLE}(?:new\s+)?{_WORDS}"
    rf"(?:api|rest\s+api|service|microservice|backend|server)s?{_PHRASE_END}",
    rf"\bmigrat(?:e|es|ing)\s+(?:[\w./-]+\s+){{0,4}}?(?:to|onto)\s+{_TECH_TARGET}",
    rf"\b(?:redesign|re-architect|rearchitect)(?:s|ing)?\s+{_ARTICLE}{_WORDS}{_SYSTEMISH}"
    rf"{_PHRASE_END}",
)

_PATTERNS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("major_work", 10, _MAJOR_WORK),
    (
        "refactoring",
        10,
        (rf"\brefactor(?:s|ing)?\s+{_ARTICLE}{_WHOLE}?{_WORDS}{_SYSTEMISH}{_PHRASE_END}",),
    ),
    (
        "debugging",
        5,
        (
            rf"\bfix(?:es|ing)?\s+{_ARTICLE}{_WORDS}{_FAULT}{_NOT_ABOUT_A_FAULT}",
            rf"\bdebug(?:s|ging)?\s+{_ARTICLE}{_WORDS}{_PROBLEM}{_NOT_ABOUT_A_FAULT}",
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
            rf"{_WHOLE}?(?:codebase|code\s+base|repository|repo){_PHRASE_END}{_NOT_TRIVIAL}",
            rf"\b(?:analy[sz]e|audit|review|survey)(?:s|ing)?\s+(?:the\s+)?{_WHOLE}"
            rf"(?:system|project|application){_PHRASE_END}{_NOT_TRIVIAL}",
        ),
    ),
)

_COMPILED = tuple(
    (name, bonus, tuple(re.compile(p, re.IGNORECASE) for p in patterns))
    for name, bonus, patterns in _PATTERNS
)


@frozen
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
