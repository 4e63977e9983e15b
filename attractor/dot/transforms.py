"""Transforms applied between parsing and validation.

Built-in transforms, in order: ``$goal`` expansion in prompts, then the model
stylesheet. Transforms modify the graph in place and return it (copying a
10,000-node graph for every transform would cost more than it protects).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from attractor.dot.graph import Graph
from attractor.errors import StylesheetError


class Transform(Protocol):
    """Rewrites a parsed graph before validation."""

    def apply(self, graph: Graph) -> Graph: ...


class GoalExpansion:
    """Replace ``$goal`` in every node prompt with the graph's ``goal``."""

    def apply(self, graph: Graph) -> Graph:
        goal = graph.goal
        for node in graph.nodes():
            prompt = node.attrs.get("prompt")
            if prompt and "$goal" in prompt:
                node.attrs["prompt"] = prompt.replace("$goal", goal)
        return graph


class StylesheetApplication:
    """Fill llm_model/llm_provider/reasoning_effort from ``model_stylesheet``.

    Attributes the node already has (written on it or inherited from a
    ``node [...]`` default) always win. An invalid stylesheet is left for the
    ``stylesheet_syntax`` lint rule to report; this transform then does nothing.
    """

    def apply(self, graph: Graph) -> Graph:
        text = graph.attrs.get("model_stylesheet", "")
        if not text.strip():
            return graph
        # Imported here: most pipelines have no stylesheet, and a cold
        # `attractor lint` compiles every module it imports.
        from attractor.dot.stylesheet import PROPERTIES, parse_stylesheet

        try:
            sheet = parse_stylesheet(text)
        except StylesheetError:
            return graph
        for node in graph.nodes():
            for prop, value in sheet.resolve(node).items():
                if prop in PROPERTIES and prop not in node.attrs:
                    node.attrs[prop] = value
        return graph


BUILTIN_TRANSFORMS: tuple[Transform, ...] = (GoalExpansion(), StylesheetApplication())


def apply_transforms(graph: Graph, extra: Iterable[Transform] = ()) -> Graph:
    """Run the built-in transforms, then ``extra`` in the given order."""
    for transform in (*BUILTIN_TRANSFORMS, *extra):
        graph = transform.apply(graph)
    return graph
