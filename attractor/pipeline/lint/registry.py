"""The lint rule protocol, the rule registry and ``validate``."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Sequence
from typing import Protocol

from attractor.errors import ValidationError
from attractor.pipeline.diagnostics import Diagnostic
from attractor.pipeline.graph import Graph
from attractor.pipeline.schema import SHAPE_TO_TYPE


class LintRule(Protocol):
    """A check over a whole graph. ``name`` is the rule id in diagnostics."""

    @property
    def name(self) -> str: ...

    def apply(self, graph: Graph) -> list[Diagnostic]: ...


#: Handler types lint accepts without the engine loaded; the engine adds its own.
#: Types the engine ships handlers for. The supervisor loop (shape=house,
#: stack.manager_loop) is in the spec's shape table but not built in.
_KNOWN_TYPES: set[str] = {*SHAPE_TO_TYPE.values()} - {"stack.manager_loop"}

#: Rules registered on top of the built-in ones (run after them, in order).
_CUSTOM_RULES: list[LintRule] = []


def register_known_type(name: str) -> None:
    """Tell ``type_known`` that a handler type ``name`` exists (engine or plugin)."""
    _KNOWN_TYPES.add(name)


def known_types() -> frozenset[str]:
    return frozenset(_KNOWN_TYPES)


def register_rule(rule: LintRule) -> None:
    """Add a custom rule to every later ``validate`` call."""
    _CUSTOM_RULES.append(rule)


def builtin_rules() -> list[LintRule]:
    """One instance of every built-in rule, in a stable order."""
    from attractor.pipeline.lint import attributes, flow, structure

    return [*structure.RULES, *flow.RULES, *attributes.RULES]


def _sort_key(d: Diagnostic) -> tuple[str, int, int, str]:
    return (d.file, d.line, d.column, d.rule)


def validate(graph: Graph, extra_rules: Iterable[LintRule] = ()) -> list[Diagnostic]:
    """Run every rule and return all diagnostics sorted by file, line, column."""
    from attractor.pipeline.lint.base import caching

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
