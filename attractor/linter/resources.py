"""The ``resources`` rule: a node's resource request reads as NAME=AMOUNT pairs."""

from __future__ import annotations

from attractor.dot.graph import Graph
from attractor.dot.resources import EXAMPLE, RESOURCES_ATTR, parse_resources
from attractor.errors import Diagnostic
from attractor.linter.base import at, facts, rule_list

RULES, rule = rule_list()


@rule("resources", "error")
def resources(graph: Graph) -> list[Diagnostic]:
    """``resources`` is a comma-separated list of NAME=AMOUNT with amounts above zero."""
    found: list[Diagnostic] = []
    for node in facts(graph).nodes:
        raw = node.raw(RESOURCES_ATTR)
        if raw is None:
            continue
        try:
            parse_resources(str(raw))
        except ValueError as exc:
            found.append(
                at(
                    "resources",
                    "error",
                    node,
                    f"resources of {node.id}: {exc}",
                    key=RESOURCES_ATTR,
                    fix=f'write resources="{EXAMPLE}" (cpu, gpu or a custom Ray resource name)',
                )
            )
    return found
