"""The edge condition language, shared by lint and the engine.

Grammar: ``clause ( '&&' clause )*``. A clause is either a comparison
``key ('=' | '!=') literal`` or a bare ``key``, which tests truthiness. Keys
are dotted identifiers. Literals are double-quoted strings (``\\"`` ``\\\\``
escapes) or bare words of letters, digits and ``_ . : -``. An empty condition
always holds; clauses are tested left to right and all of them must hold.

Keys resolve as in sections 10.4-10.5 of the attractor spec:

- ``outcome`` is the stage status and ``preferred_label`` the outcome's label;
- ``context.x`` reads the run context at ``context.x``, then at ``x``;
- any other key (``tests_passed``, ``tool.exit_code``) reads the run context
  at exactly that key;
- a missing key is the empty string. Values compare as text: Python booleans
  read as ``true``/``false``, ``None`` as the empty string, the rest as ``str()``.

Choices where the reference is loose (documented here because users see them):

- A bare key is false when its text, trimmed and lowercased, is ``""``,
  ``"0"`` or ``"false"`` (so a missing key, ``False``, ``0`` and
  ``--set ready=false`` are all false), and true otherwise, including
  ``"no"``, ``"0.0"`` and ``"[]"``. The reference uses plain string
  truthiness, which would make ``false`` true.
- A bare ``outcome`` is a syntax error: the status is never empty, so it would
  always hold (and would make the edge a failure route).
- ``outcome`` compares against the stage statuses, so ``outcome=sucess`` is an
  error with a did-you-mean rather than an edge that can never be taken.
- A plain key that looks like a misspelt ``outcome`` or ``preferred_label``
  (``outcom=success``) parses as a context key, as the reference says; lint
  warns about it (see :func:`special_key_typo`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, Protocol

from attractor.errors import ConditionError
from attractor.valueclass import frozen


class Lookup(Protocol):
    """Where condition keys other than outcome and preferred_label are read (the run context)."""

    def get(self, key: str, default: object = None) -> object: ...


Operator = Literal["=", "!="]

OUTCOME_VALUES = ("success", "partial_success", "retry", "fail", "skipped")
#: Keys read from the stage outcome rather than the run context.
SPECIAL_KEYS = ("outcome", "preferred_label")
#: Text forms (trimmed, lowercased) that make a bare-key clause false.
FALSY_TEXT = frozenset({"", "0", "false"})
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_BARE = re.compile(r"[A-Za-z0-9_.:\-]+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SPACE = re.compile(r"\s*")
_UNESCAPE = re.compile(r"\\(.)")


@frozen
class Clause:
    """``key op literal``, or a bare ``key`` (``op`` None) that tests truthiness.

    ``column`` is where the clause starts (1-based).
    """

    key: str
    op: Operator | None
    literal: str
    column: int


@frozen
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

    def at_clause_end(self) -> bool:
        return self.pos == len(self.text) or self.text.startswith("&&", self.pos)

    def clause(self) -> Clause:
        self.skip_space()
        start = self.pos
        match = _KEY.match(self.text, self.pos)
        if match is None:
            raise self.fail(
                "expected a key (outcome, preferred_label, context.NAME or a context key), "
                f"found {self.found()}"
            )
        key = match.group()
        self.pos = match.end()
        self.skip_space()
        op = self.operator(key)
        if op is None:
            return Clause(key, None, "", start + 1)
        self.skip_space()
        literal = self.literal(op)
        if key == "outcome":
            _check_outcome(literal, self, start)
        return Clause(key, op, literal, start + 1)

    def operator(self, key: str) -> Operator | None:
        """The comparison after ``key``; None when the clause is a bare key."""
        if self.text.startswith("!=", self.pos):
            self.pos += 2
            return "!="
        if self.text.startswith("==", self.pos):
            raise self.fail("use '=' (not '==') to compare")
        if self.text.startswith("=", self.pos):
            self.pos += 1
            return "="
        if self.at_clause_end():
            if key == "outcome":
                # The status is never empty, so a bare outcome would always hold.
                raise self.fail("expected '=' or '!=' after outcome, e.g. outcome=success")
            return None
        if self.text.startswith(".", self.pos):
            raise self.fail(f"expected a name after '{key}.'")
        raise self.fail(
            f"expected '=', '!=', '&&' or end of condition after {key}, found {self.found()}"
        )

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


def _check_outcome(value: str, scanner: _Scanner, start: int) -> None:
    if value in OUTCOME_VALUES:
        return
    from difflib import get_close_matches  # rarely needed: off the import path

    close = get_close_matches(value.lower(), OUTCOME_VALUES, n=1, cutoff=0.6)
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
    """The keys a condition tests, as written (``outcome``, ``context.x``, ``ready``, ...).

    Raises:
        ConditionError: when ``text`` does not parse.
    """
    return frozenset(clause.key for clause in parse_condition(text).clauses)


def special_key_typo(key: str) -> str | None:
    """The special key that plain ``key`` looks like a misspelling of, else None.

    ``outcom`` gives ``outcome``; dotted keys (``context.x``, ``tool.output``)
    and the special keys themselves give None.
    """
    if key in SPECIAL_KEYS or "." in key:
        return None
    from difflib import get_close_matches  # rarely needed: off the import path

    close = get_close_matches(key.lower(), SPECIAL_KEYS, n=1, cutoff=0.75)
    return close[0] if close else None


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def is_truthy(text: str) -> bool:
    """Whether a resolved value makes a bare-key clause hold (see :data:`FALSY_TEXT`)."""
    return text.strip().lower() not in FALSY_TEXT


def resolve_key(key: str, outcome: str, preferred_label: str, context: Lookup) -> str:
    """The text a key stands for; a key the context lacks is the empty string."""
    if key == "outcome":
        return outcome
    if key == "preferred_label":
        return preferred_label
    value = context.get(key)
    if value is None and key.startswith("context."):
        # ``context.x`` also finds a value stored under plain ``x``.
        value = context.get(key.removeprefix("context."))
    return _as_text(value)


def _holds(clause: Clause, actual: str) -> bool:
    if clause.op is None:
        return is_truthy(actual)
    return (actual == clause.literal) == (clause.op == "=")


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
    return all(
        _holds(clause, resolve_key(clause.key, outcome, preferred_label, context))
        for clause in parsed.clauses
    )
