"""The lint rule protocol, the rule registry and ``validate``."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from typing import Protocol

from attractor.dot.graph import Graph
from attractor.errors import Diagnostic, ValidationError
from attractor.linter import (
    attributes,
    backends,
    dialects,
    flow,
    manager,
    mcp,
    prompts,
    resources,
    routing,
    structure,
    sub_pipelines,
    threads,
)
from attractor.linter.base import FunctionRule, caching
from attractor.linter.cascade import quiet_followers, repaired, typo_aliases


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


def builtin_rules() -> list[FunctionRule]:
    """One instance of every built-in rule, in a stable order."""
    return [*structure.RULES, *routing.RULES, *flow.RULES, *_NODE_RULES]


#: Rules about single nodes and their attributes (run on the graph as written).
_NODE_RULES = (
    *attributes.RULES,
    *dialects.RULES,
    *prompts.RULES,
    *threads.RULES,
    *manager.RULES,
    *sub_pipelines.RULES,
    *backends.RULES,
    *resources.RULES,
    *mcp.RULES,
)


def _run_builtin(graph: Graph) -> list[Diagnostic]:
    """The built-in rules; flow rules see misspelt edge endpoints already corrected."""
    found: list[Diagnostic] = []
    with caching(graph):
        aliases = typo_aliases(graph)
        for rule in (*structure.RULES, *routing.RULES, *_NODE_RULES):
            found.extend(rule.apply(graph))
        if not aliases:
            for rule in flow.RULES:
                found.extend(rule.apply(graph))
            return found
    meant = repaired(graph, aliases)
    with caching(meant):
        for rule in flow.RULES:
            found.extend(rule.apply(meant))
    return found


def _sort_key(d: Diagnostic) -> tuple[str, int, int, str]:
    return (d.file, d.line, d.column, d.rule)


def validate(graph: Graph, extra_rules: Iterable[LintRule] = ()) -> list[Diagnostic]:
    """Run every rule and return all diagnostics sorted by file, line, column."""
    found: list[Diagnostic] = []
    was_enabled = gc.isenabled()
    gc.disable()  # rules allocate many short views; full collections only cost time here
    try:
        found.extend(_run_builtin(graph))
        with caching(graph):
            for rule in (*_CUSTOM_RULES, *extra_rules):
                found.extend(rule.apply(graph))
    finally:
        if was_enabled:
            gc.enable()
    return sorted(quiet_followers(found, builtin_rules()), key=_sort_key)


def validate_or_raise(graph: Graph, extra_rules: Sequence[LintRule] = ()) -> list[Diagnostic]:
    """Like :func:`validate`, raising ValidationError when any diagnostic is an error."""
    found = validate(graph, extra_rules)
    if any(d.is_error for d in found):
        raise ValidationError(found)
    return found
