"""The model stylesheet: CSS-like defaults for llm_model, llm_provider and reasoning_effort.

::

    * { llm_model: claude-sonnet-4-5; llm_provider: anthropic }
    box { reasoning_effort: medium }
    .code { llm_model: claude-opus-4-6 }
    #review { llm_model: gpt-5.2; llm_provider: openai }

Selectors and specificity: ``*`` 0, a shape name 1, ``.class`` 2, ``#node_id``
3. Among matching rules the highest specificity wins, and a later rule wins
over an earlier one of equal specificity. ``/* */`` comments are allowed.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from attractor.dot.dialects import PROPERTY_ALIASES
from attractor.errors import StylesheetError
from attractor.valueclass import frozen

if TYPE_CHECKING:
    from attractor.dot.graph import Node

SelectorKind = Literal["*", "shape", "class", "id"]
PROPERTIES = ("llm_model", "llm_provider", "reasoning_effort")
REASONING_EFFORTS = ("low", "medium", "high")
_SPECIFICITY: dict[SelectorKind, int] = {"*": 0, "shape": 1, "class": 2, "id": 3}

_TOKEN = re.compile(
    r"""(?P<space>(?:\s+|/\*[\s\S]*?\*/)+)
      | (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<word>[A-Za-z0-9_/@+\-][A-Za-z0-9_./@+\-]*)
      | (?P<punct>[{}:;*#.])
      | (?P<bad>[\s\S])""",
    re.VERBOSE,
)


@frozen
class Rule:
    """One ``selector { property: value; ... }`` rule."""

    kind: SelectorKind
    name: str
    declarations: tuple[tuple[str, str], ...]
    order: int

    @property
    def specificity(self) -> int:
        return _SPECIFICITY[self.kind]

    def matches(self, node: Node) -> bool:
        if self.kind == "*":
            return True
        if self.kind == "id":
            return node.id == self.name
        if self.kind == "class":
            return self.name in node.classes
        return node.shape == self.name


@frozen
class Stylesheet:
    """Parsed rules in source order."""

    rules: tuple[Rule, ...]
    #: Property aliases written (``model:``), as (written, canonical, line, column).
    aliases: tuple[tuple[str, str, int, int], ...] = ()

    def resolve(self, node: Node) -> dict[str, str]:
        """Property values for ``node`` from the rules alone (no node attributes)."""
        chosen: dict[str, tuple[int, int, str]] = {}
        for rule in self.rules:
            if not rule.matches(node):
                continue
            rank = (rule.specificity, rule.order)
            for prop, value in rule.declarations:
                if prop not in chosen or rank >= chosen[prop][:2]:
                    chosen[prop] = (*rank, value)
        return {prop: value for prop, (_, _, value) in chosen.items()}


class _Tokens:
    def __init__(self, text: str) -> None:
        self.text = text
        self.items: list[tuple[str, str, int]] = []
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup or "bad"
            if kind == "bad":
                if match.group() == '"':
                    raise self.error("unterminated string", match.start())
                raise self.error(f"unexpected character {match.group()!r}", match.start())
            if kind != "space":
                self.items.append((kind, match.group(), match.start()))
        self.items.append(("end", "", len(text)))
        self.i = 0
        self.aliases: list[tuple[str, str, int, int]] = []

    def line_column(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def error(self, message: str, offset: int) -> StylesheetError:
        line, column = self.line_column(offset)
        return StylesheetError(message, line=line, column=column)

    def next(self) -> tuple[str, str, int]:
        item = self.items[self.i]
        if item[0] != "end":
            self.i += 1
        return item

    def peek(self) -> tuple[str, str, int]:
        return self.items[self.i]

    def expect(self, value: str, what: str) -> None:
        kind, text, offset = self.next()
        if text != value or kind == "string":
            raise self.error(f"expected {what}, found {_describe(kind, text)}", offset)


def _describe(kind: str, text: str) -> str:
    return "end of stylesheet" if kind == "end" else f"'{text}'"


def _selector(tokens: _Tokens) -> tuple[SelectorKind, str]:
    kind, text, offset = tokens.next()
    if text == "*" and kind == "punct":
        return "*", "*"
    if text in ("#", ".") and kind == "punct":
        name_kind, name, name_offset = tokens.next()
        if name_kind != "word" or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            what = "a node id" if text == "#" else "a class name"
            raise tokens.error(f"expected {what} after '{text}'", name_offset)
        return ("id" if text == "#" else "class"), name
    if kind == "word" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return "shape", text
    raise tokens.error(
        f"expected a selector (*, shape, .class or #id), found {_describe(kind, text)}", offset
    )


def _declaration(tokens: _Tokens) -> tuple[str, str]:
    kind, prop, offset = tokens.next()
    if kind == "word" and prop in PROPERTY_ALIASES:
        # Resolved here, once: the rules only ever hold our property names.
        tokens.aliases.append((prop, PROPERTY_ALIASES[prop], *tokens.line_column(offset)))
        prop = PROPERTY_ALIASES[prop]
    if kind != "word" or prop not in PROPERTIES:
        from difflib import get_close_matches  # rarely needed: off the import path

        close = get_close_matches(prop, PROPERTIES, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise tokens.error(
            f"unknown property {_describe(kind, prop)}: {hint}use " + ", ".join(PROPERTIES),
            offset,
        )
    tokens.expect(":", f"':' after {prop}")
    value = _value(tokens, prop)
    return prop, value


def _value(tokens: _Tokens, prop: str) -> str:
    kind, text, offset = tokens.next()
    if kind == "string":
        value = re.sub(r"\\(.)", r"\1", text[1:-1])
    elif kind == "word":
        value = text
        end = offset + len(text)
        # A bare value may contain ':' (a model tag like qwen:7b) when written without spaces.
        while tokens.peek()[2] == end and (tokens.peek()[0] == "word" or tokens.peek()[1] == ":"):
            value += tokens.next()[1]
            end = offset + len(value)
    else:
        raise tokens.error(f"expected a value for {prop}, found {_describe(kind, text)}", offset)
    if prop == "reasoning_effort" and value not in REASONING_EFFORTS:
        raise tokens.error(f"reasoning_effort must be low, medium or high, not '{value}'", offset)
    return value


def _rule(tokens: _Tokens, order: int) -> Rule:
    kind, name = _selector(tokens)
    tokens.expect("{", "'{' after the selector")
    declarations: list[tuple[str, str]] = []
    while tokens.peek()[1] != "}" or tokens.peek()[0] == "string":
        if tokens.peek()[0] == "end":
            raise tokens.error("expected '}' to close the rule", tokens.peek()[2])
        declarations.append(_declaration(tokens))
        kind_, text, offset = tokens.peek()
        if text == ";" and kind_ == "punct":
            tokens.next()
        elif text != "}":
            raise tokens.error(f"expected ';' or '}}', found {_describe(kind_, text)}", offset)
    tokens.next()
    return Rule(kind, name, tuple(declarations), order)


@lru_cache(maxsize=64)
def parse_stylesheet(text: str) -> Stylesheet:
    """Parse stylesheet ``text`` (empty text is an empty stylesheet).

    Raises:
        StylesheetError: with the 1-based line and column inside ``text``.
    """
    tokens = _Tokens(text)
    rules: list[Rule] = []
    while tokens.peek()[0] != "end":
        rules.append(_rule(tokens, len(rules)))
    return Stylesheet(tuple(rules), tuple(tokens.aliases))
