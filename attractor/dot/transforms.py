"""Transforms applied between parsing and validation.

Built-in transforms, in order: aliases of other engines' dialects resolved to
our names (:mod:`attractor.dot.dialects`), prompt files read
(:mod:`attractor.dot.prompts`), ``$goal`` expansion in prompts, then the model
stylesheet. Transforms modify the graph in place and return it (copying a
10,000-node graph for every transform would cost more than it protects).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from attractor.dot.dialects import (
    TYPE_ALIASES,
    VALUE_PREFIXES,
    AliasUse,
    canonical_attribute,
    canonical_condition,
)
from attractor.dot.graph import Edge, Graph, Node
from attractor.dot.prompts import PromptFiles
from attractor.errors import StylesheetError


class Transform(Protocol):
    """Rewrites a parsed graph before validation."""

    def apply(self, graph: Graph) -> Graph: ...


class AliasResolution:
    """Rename every alias (``model``, ``outcome=succeeded``) to our canonical form.

    Runs first, so the other transforms, lint and the engine only ever see our
    names. Each alias resolved is recorded in ``graph.aliases`` with where it
    was written; when an item also sets the canonical attribute, that value
    wins and the alias's value is dropped (recorded as shadowed).
    """

    def apply(self, graph: Graph) -> Graph:
        uses = graph.aliases
        self._rename(graph, graph, uses)
        for node in graph.nodes():
            self._rename(graph, node, uses)
            self._type(node, uses)
        for edge in graph.edges():
            self._condition(edge, uses)
        return graph

    @staticmethod
    def _rename(graph: Graph, item: Graph | Node, uses: list[AliasUse]) -> None:
        attrs = item.attrs
        found = [(k, c) for k, v in attrs.items() if (c := canonical_attribute(item.scope, k, v))]
        for key, canonical in found:
            pos = item.pos_of(key) or item.pos
            value = VALUE_PREFIXES.get((item.scope, key), "") + item.attrs.pop(key)
            shadowed = canonical in item.attrs
            if not shadowed:
                item.set(canonical, value, pos)
            node = item.id if isinstance(item, Node) else None
            uses.append(AliasUse("attribute", key, canonical, pos, node, None, shadowed))

    @staticmethod
    def _type(node: Node, uses: list[AliasUse]) -> None:
        written = node.attrs.get("type", "").strip()
        canonical = TYPE_ALIASES.get(written)
        if canonical is not None:
            pos = node.pos_of("type") or node.pos
            node.set("type", canonical, pos)
            uses.append(AliasUse("type", f"type={written}", f"type={canonical}", pos, node.id))
        if node.attrs.get("type") == "subgraph" and "path" in node.attrs:
            # ``type=include path="x.dot"``: on a sub-pipeline, ``path`` names its file.
            pos = node.pos_of("path") or node.pos
            value = node.attrs.pop("path")
            shadowed = "dot_file" in node.attrs
            if not shadowed:
                node.set("dot_file", value, pos)
            uses.append(AliasUse("attribute", "path", "dot_file", pos, node.id, None, shadowed))

    @staticmethod
    def _condition(edge: Edge, uses: list[AliasUse]) -> None:
        text = edge.attrs.get("condition")
        if not text or "outcome" not in text:
            return
        new, found = canonical_condition(text)
        if not found:
            return
        pos = edge.pos_of("condition") or edge.pos
        edge.set("condition", new, pos)
        ends = (edge.source, edge.target)
        for written, canonical, _column in found:
            uses.append(AliasUse("outcome", written, canonical, pos, None, ends))


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
    """Fill llm_model/llm_provider/reasoning_effort from ``model_stylesheet``,
    then llm_model/llm_provider from the graph's own (its default for every node).

    Attributes the node already has (written on it or inherited from a
    ``node [...]`` default) always win, then the stylesheet's rules, then the
    graph attribute (the spec's order). An invalid stylesheet is left for the
    ``stylesheet_syntax`` lint rule to report; its rules then apply nowhere.
    """

    def apply(self, graph: Graph) -> Graph:
        text = graph.attrs.get("model_stylesheet", "")
        if text.strip():
            self._stylesheet(graph, text)
        defaults = {k: graph.attrs[k] for k in GRAPH_MODEL_DEFAULTS if graph.attrs.get(k)}
        if defaults:
            for node in graph.nodes():
                for prop, value in defaults.items():
                    node.attrs.setdefault(prop, value)
        return graph

    @staticmethod
    def _stylesheet(graph: Graph, text: str) -> None:
        # Imported here: most pipelines have no stylesheet, and a cold
        # `attractor lint` compiles every module it imports.
        from attractor.dot.stylesheet import PROPERTIES, parse_stylesheet

        try:
            sheet = parse_stylesheet(text)
        except StylesheetError:
            return
        for node in graph.nodes():
            for prop, value in sheet.resolve(node).items():
                if prop in PROPERTIES and prop not in node.attrs:
                    node.attrs[prop] = value


#: Graph attributes that are every node's default, below the stylesheet.
GRAPH_MODEL_DEFAULTS = ("llm_model", "llm_provider")


BUILTIN_TRANSFORMS: tuple[Transform, ...] = (
    AliasResolution(),
    PromptFiles(),
    GoalExpansion(),
    StylesheetApplication(),
)


def apply_transforms(graph: Graph, extra: Iterable[Transform] = ()) -> Graph:
    """Run the built-in transforms, then ``extra`` in the given order."""
    for transform in (*BUILTIN_TRANSFORMS, *extra):
        graph = transform.apply(graph)
    return graph
