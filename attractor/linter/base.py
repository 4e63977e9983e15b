"""Helpers shared by the built-in rules: a function-backed rule and positioned diagnostics."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache

from attractor.dot.graph import Edge, Graph, Node, SourcePos
from attractor.dot.schema import SHAPE_TO_TYPE
from attractor.errors import Diagnostic, Severity
from attractor.linter.handler_types import closed_handler_types as closed_handler_types
from attractor.linter.handler_types import handler_types_closed as handler_types_closed
from attractor.valueclass import frozen

Check = Callable[[Graph], list[Diagnostic]]


@frozen
class Facts:
    """Views of a graph computed once per ``validate`` call and shared by the rules.

    Building Node/Edge views and sorting edges is the main per-rule cost on
    large graphs, so rules read these lists instead of calling graph.nodes().
    """

    nodes: list[Node]
    edges: list[Edge]
    #: Each node's handler type, by node id.
    types: dict[str, str]
    starts: list[Node]
    exits: list[Node]
    #: The nodes of each handler type, in graph order.
    by_type: dict[str, list[Node]]

    @property
    def start(self) -> Node | None:
        return self.starts[0] if len(self.starts) == 1 else None

    def of_type(self, kind: str) -> list[Node]:
        """The nodes whose handler type is ``kind``."""
        return self.by_type.get(kind, [])


_FACTS: dict[int, tuple[Graph, Facts]] = {}


def facts(graph: Graph) -> Facts:
    """The shared views of ``graph`` (cached while :func:`caching` is active)."""
    cached = _FACTS.get(id(graph))
    if cached is not None and cached[0] is graph:
        return cached[1]
    nodes = graph.nodes()
    types: dict[str, str] = {}
    by_type: dict[str, list[Node]] = {}
    for node in nodes:
        kind = types[node.id] = node.handler_type
        by_type.setdefault(kind, []).append(node)
    starts, exits = graph.start_candidates(), graph.exit_candidates()
    return Facts(nodes, graph.edges(), types, starts, exits, by_type)


@contextmanager
def caching(graph: Graph) -> Iterator[None]:
    """Compute ``facts(graph)`` once for the rules that run inside this block."""
    _FACTS[id(graph)] = (graph, facts(graph))
    try:
        yield
    finally:
        _FACTS.pop(id(graph), None)


@frozen
class FunctionRule:
    """A LintRule whose check is a plain function (its docstring documents the rule).

    ``severities`` are the severities the rule reports (most rules have one);
    ``after`` names rules it follows from: when one of them reports an error on
    the same node or edge, this rule stays quiet there (one root cause, one
    diagnostic).
    """

    name: str
    check: Check
    severities: tuple[Severity, ...] = ("error",)
    after: tuple[str, ...] = ()

    def apply(self, graph: Graph) -> list[Diagnostic]:
        return self.check(graph)

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.check) or ""


RuleDecorator = Callable[..., Callable[[Check], Check]]


def rule_list() -> tuple[list[FunctionRule], RuleDecorator]:
    """A module's rule list and the decorator that fills it.

    ``@rule("name", "error", "warning", after=("other",))`` registers a check.
    """
    rules: list[FunctionRule] = []

    def rule(
        name: str, *severities: Severity, after: tuple[str, ...] = ()
    ) -> Callable[[Check], Check]:
        def register(check: Check) -> Check:
            rules.append(FunctionRule(name, check, severities or ("error",), after))
            return check

        return register

    return rules, rule


def at(
    rule: str,
    severity: Severity,
    where: Node | Edge | Graph,
    message: str,
    *,
    key: str | None = None,
    fix: str,
) -> Diagnostic:
    """A diagnostic positioned at a node, edge or graph (or one of its attributes).

    ``fix`` is required: every finding says what to write instead.
    """
    pos: SourcePos = where.pos
    if key is not None:
        pos = where.pos_of(key) or pos
    node = where.id if isinstance(where, Node) else None
    edge = (where.source, where.target) if isinstance(where, Edge) else None
    return Diagnostic(rule, severity, message, pos.file, pos.line, pos.column, node, edge, fix)


def at_value(
    rule: str,
    severity: Severity,
    where: Node | Edge | Graph,
    message: str,
    *,
    key: str,
    offset: int,
    fix: str,
) -> Diagnostic:
    """A diagnostic at column ``offset`` (1-based) inside the value of attribute ``key``.

    Falls back to the attribute's own position when the value cannot be found
    on the same line (written across lines, or with escapes before ``offset``).
    """
    found = at(rule, severity, where, message, key=key, fix=fix)
    pos = where.pos_of(key)
    graph = where if isinstance(where, Graph) else where.graph
    if pos is None or not graph.source:
        return found
    lines = _lines(graph.source)
    if pos.line > len(lines):
        return found
    line = lines[pos.line - 1]
    match = re.compile(re.escape(key) + r'\s*=\s*"').match(line, pos.column - 1)
    if match is None:
        return found
    value = line[match.end() : match.end() + offset]
    if "\\" in value or len(value) < offset - 1:
        return found
    return replace(found, column=match.end() + offset)


@lru_cache(maxsize=4)
def _lines(source: str) -> list[str]:
    return source.splitlines()


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The closest choice to ``word`` when it looks like a typo of it."""
    from difflib import get_close_matches  # rarely needed: off the import path

    found = get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return found[0] if found else None


#: Handler types lint accepts without the engine loaded (every type of the shape
#: table is built in); plugins add their own.
_KNOWN_TYPES: set[str] = {*SHAPE_TO_TYPE.values()}


def register_known_type(name: str) -> None:
    """Tell ``type_known`` that a handler type ``name`` exists (engine or plugin)."""
    _KNOWN_TYPES.add(name)


def known_types() -> frozenset[str]:
    return frozenset(_KNOWN_TYPES)
