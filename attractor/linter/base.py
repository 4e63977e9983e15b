"""Helpers shared by the built-in rules: a function-backed rule and positioned diagnostics."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from attractor.dot.graph import Edge, Graph, Node, SourcePos
from attractor.dot.schema import SHAPE_TO_TYPE
from attractor.errors import Diagnostic, Severity

Check = Callable[[Graph], list[Diagnostic]]


@dataclass(frozen=True)
class Facts:
    """Views of a graph computed once per ``validate`` call and shared by the rules.

    Building Node/Edge views and sorting edges is the main per-rule cost on
    large graphs, so rules read these lists instead of calling graph.nodes().
    """

    nodes: list[Node]
    edges: list[Edge]
    types: dict[str, str]
    starts: list[Node]
    exits: list[Node]

    @property
    def start(self) -> Node | None:
        return self.starts[0] if len(self.starts) == 1 else None


_FACTS: dict[int, tuple[Graph, Facts]] = {}


def facts(graph: Graph) -> Facts:
    """The shared views of ``graph`` (cached while :func:`caching` is active)."""
    cached = _FACTS.get(id(graph))
    if cached is not None and cached[0] is graph:
        return cached[1]
    nodes = graph.nodes()
    return Facts(
        nodes,
        graph.edges(),
        {n.id: n.handler_type for n in nodes},
        graph.start_candidates(),
        graph.exit_candidates(),
    )


@contextmanager
def caching(graph: Graph) -> Iterator[None]:
    """Compute ``facts(graph)`` once for the rules that run inside this block."""
    _FACTS[id(graph)] = (graph, facts(graph))
    try:
        yield
    finally:
        _FACTS.pop(id(graph), None)


@dataclass(frozen=True)
class FunctionRule:
    """A LintRule whose check is a plain function (its docstring documents the rule)."""

    name: str
    check: Check

    def apply(self, graph: Graph) -> list[Diagnostic]:
        return self.check(graph)


def rule_list() -> tuple[list[FunctionRule], Callable[[str], Callable[[Check], Check]]]:
    """A module's rule list and the decorator that fills it."""
    rules: list[FunctionRule] = []

    def rule(name: str) -> Callable[[Check], Check]:
        def register(check: Check) -> Check:
            rules.append(FunctionRule(name, check))
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
    fix: str | None = None,
) -> Diagnostic:
    """A diagnostic positioned at a node, edge or graph (or one of its attributes)."""
    pos: SourcePos = where.pos
    if key is not None:
        pos = where.attr_pos.get(key, pos)
    node = where.id if isinstance(where, Node) else None
    edge = (where.source, where.target) if isinstance(where, Edge) else None
    return Diagnostic(rule, severity, message, pos.file, pos.line, pos.column, node, edge, fix)


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The closest choice to ``word`` when it looks like a typo of it."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return found[0] if found else None


#: Handler types lint accepts without the engine loaded (every type of the shape
#: table is built in); plugins add their own.
_KNOWN_TYPES: set[str] = {*SHAPE_TO_TYPE.values()}


def register_known_type(name: str) -> None:
    """Tell ``type_known`` that a handler type ``name`` exists (engine or plugin)."""
    _KNOWN_TYPES.add(name)


def known_types() -> frozenset[str]:
    return frozenset(_KNOWN_TYPES)
