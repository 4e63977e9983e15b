"""The lint rule protocol, the rule registry and ``validate``."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from typing import Protocol

from attractor.dot.graph import Graph
from attractor.errors import Diagnostic, ValidationError
from attractor.linter import attributes, backends, flow, manager, structure, threads
from attractor.linter.base import caching


class LintRule(Protocol):
    """A check over a whole graph. ``name`` is the rule id in diagnostics."""

    @property
    def name(self) -> str: ...

    def apply(self, graph: Graph) -> list[Diagnostic]: ...


#: Rules registered on top of the built-in ones (run after them, in order).
_CUSTOM_RULES: list[LintRule] = []


def register_rule(rule: LintRule) -> None:
    """Add a custom rule to every later ``validate`` call."""
    _CUSTOM_RULES.append(rule)


def builtin_rules() -> list[LintRule]:
    """One instance of every built-in rule, in a stable order."""
    return [
        *structure.RULES,
        *flow.RULES,
        *attributes.RULES,
        *threads.RULES,
        *manager.RULES,
        *backends.RULES,
    ]


def _sort_key(d: Diagnostic) -> tuple[str, int, int, str]:
    return (d.file, d.line, d.column, d.rule)


def validate(graph: Graph, extra_rules: Iterable[LintRule] = ()) -> list[Diagnostic]:
    """Run every rule and return all diagnostics sorted by file, line, column."""
    found: list[Diagnostic] = []
    was_enabled = gc.isenabled()
    gc.disable()  # rules allocate many short views; full collections only cost time here
    try:
        with caching(graph):
            for rule in (*builtin_rules(), *_CUSTOM_RULES, *extra_rules):
                found.extend(rule.apply(graph))
    finally:
        if was_enabled:
            gc.enable()
    return sorted(found, key=_sort_key)


def validate_or_raise(graph: Graph, extra_rules: Sequence[LintRule] = ()) -> list[Diagnostic]:
    """Like :func:`validate`, raising ValidationError when any diagnostic is an error."""
    found = validate(graph, extra_rules)
    if any(d.is_error for d in found):
        raise ValidationError(found)
    return found
