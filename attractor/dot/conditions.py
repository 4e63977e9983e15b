"""The edge condition language, shared by lint and the engine.

Grammar: ``clause ( '&&' clause )*`` where a clause is ``key ('=' | '!=') literal``.
Keys are ``outcome``, ``preferred_label`` or ``context.NAME`` (dotted names
allowed). Literals are double-quoted strings (``\\"`` ``\\\\`` escapes) or bare
words of letters, digits and ``_ . : -``. An empty condition always holds.

Choices where the reference is loose (documented here because users see them):

- A clause must have an operator: a bare key (truthiness) is a syntax error, so
  a typo like ``outcome-success`` is caught by lint instead of silently failing.
- Unknown keys are errors; the only free-form namespace is ``context.*``.
- ``outcome`` compares against the stage statuses, so ``outcome=sucess`` is an
  error with a did-you-mean rather than an edge that can never be taken.
- ``context.x`` looks up ``context.x`` and then ``x`` in the run context; a
  missing key is the empty string; Python booleans read as ``true``/``false``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Protocol

from attractor.errors import ConditionError


class Lookup(Protocol):
    """Where condition keys other than outcome and preferred_label are read (the run context)."""

    def get(self, key: str, default: object = None) -> object: ...

Operator = Literal["=", "!="]

OUTCOME_VALUES = ("success", "partial_success", "retry", "fail", "skipped")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_BARE = re.compile(r"[A-Za-z0-9_.:\-]+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SPACE = re.compile(r"\s*")
_UNESCAPE = re.compile(r"\\(.)")


@dataclass(frozen=True)
class Clause:
    """``key op literal``; ``column`` is where the clause starts (1-based)."""

    key: str
    op: Operator
    literal: str
    column: int


@dataclass(frozen=True)
class Condition:
    """A parsed condition: all clauses must hold."""

    text: str
    clauses: tuple[Clause, ...]


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        match = _SPACE.match(self.text, self.pos)
        self.pos = match.end() if match else self.pos

    def fail(self, message: str, pos: int | None = None) -> ConditionError:
        where = self.pos if pos is None else pos
        return ConditionError(message, text=self.text, column=where + 1)

    def found(self) -> str:
        rest = self.text[self.pos :]
        return f"'{rest[:12]}'" if rest else "end of condition"

    def clause(self) -> Clause:
        self.skip_space()
        start = self.pos
        match = _KEY.match(self.text, self.pos)
        if match is None:
            raise self.fail(
                f"expected outcome, preferred_label or context.NAME, found {self.found()}"
            )
        key = match.group()
        _check_key(key, self, start)
        self.pos = match.end()
        self.skip_space()
        op = self.operator(key)
        self.skip_space()
        literal = self.literal(op)
        if key == "outcome":
            _check_outcome(literal, self, start)
        return Clause(key, op, literal, start + 1)

    def operator(self, key: str) -> Operator:
        if self.text.startswith("!=", self.pos):
            self.pos += 2
            return "!="
        if self.text.startswith("==", self.pos):
            raise self.fail("use '=' (not '==') to compare")
        if self.text.startswith("=", self.pos):
            self.pos += 1
            return "="
        raise self.fail(f"expected '=' or '!=' after {key}, found {self.found()}")

    def literal(self, op: str) -> str:
        quoted = _QUOTED.match(self.text, self.pos)
        if quoted is not None:
            self.pos = quoted.end()
            return _UNESCAPE.sub(r"\1", quoted.group(1))
        if self.text.startswith('"', self.pos):
            raise self.fail('unterminated string; close it with a matching "')
        bare = _BARE.match(self.text, self.pos)
        if bare is None:
            raise self.fail(f"expected a value after '{op}', found {self.found()}")
        self.pos = bare.end()
        return bare.group()


def _check_key(key: str, scanner: _Scanner, start: int) -> None:
    if key in ("outcome", "preferred_label") or key.startswith("context."):
        return
    close = difflib.get_close_matches(key, ["outcome", "preferred_label"], n=1, cutoff=0.7)
    hint = f"did you mean {close[0]}? " if close else ""
    raise scanner.fail(
        f"unknown key '{key}': {hint}use outcome, preferred_label or context.NAME", start
    )


def _check_outcome(value: str, scanner: _Scanner, start: int) -> None:
    if value in OUTCOME_VALUES:
        return
    close = difflib.get_close_matches(value.lower(), OUTCOME_VALUES, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    raise scanner.fail(
        f"outcome is never '{value}': {hint}use one of " + ", ".join(OUTCOME_VALUES), start
    )


@lru_cache(maxsize=1024)
def parse_condition(text: str) -> Condition:
    """Parse a condition expression.

    Raises:
        ConditionError: with the 1-based column of the problem in ``text``.
    """
    scanner = _Scanner(text)
    scanner.skip_space()
    if scanner.pos == len(text):
        return Condition(text, ())
    clauses = [scanner.clause()]
    while True:
        scanner.skip_space()
        if scanner.pos == len(text):
            return Condition(text, tuple(clauses))
        if not text.startswith("&&", scanner.pos):
            raise scanner.fail(f"expected '&&' or end of condition, found {scanner.found()}")
        scanner.pos += 2
        clauses.append(scanner.clause())


def condition_keys(text: str) -> frozenset[str]:
    """The keys a condition tests (``outcome``, ``preferred_label``, ``context.NAME``).

    Raises:
        ConditionError: when ``text`` does not parse.
    """
    return frozenset(clause.key for clause in parse_condition(text).clauses)


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _resolve(key: str, outcome: str, preferred_label: str, context: Lookup) -> str:
    if key == "outcome":
        return outcome
    if key == "preferred_label":
        return preferred_label
    value = context.get(key)
    if value is None:
        value = context.get(key.removeprefix("context."))
    return _as_text(value)


def evaluate(
    condition: str | Condition,
    *,
    outcome: str,
    preferred_label: str,
    context: Lookup,
) -> bool:
    """Whether ``condition`` holds for a stage outcome and the run context.

    Raises:
        ConditionError: when given text that does not parse.
    """
    parsed = parse_condition(condition) if isinstance(condition, str) else condition
    for clause in parsed.clauses:
        actual = _resolve(clause.key, outcome, preferred_label, context)
        if (actual == clause.literal) != (clause.op == "="):
            return False
    return True
