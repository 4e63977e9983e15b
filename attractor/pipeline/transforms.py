"""Transforms applied between parsing and validation, and :func:`prepare`.

Built-in transforms, in order: ``$goal`` expansion in prompts, then the model
stylesheet. Transforms modify the graph in place and return it (copying a
10,000-node graph for every transform would cost more than it protects).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from attractor.errors import PipelineSyntaxError, StylesheetError
from attractor.pipeline.diagnostics import Diagnostic
from attractor.pipeline.graph import Graph
from attractor.pipeline.parser import parse_dot, read_source
from attractor.pipeline.stylesheet import PROPERTIES, parse_stylesheet

if TYPE_CHECKING:
    from attractor.pipeline.lint.registry import LintRule


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


def _source(source: str | Path, file: str | None) -> tuple[str, str]:
    """(text, file name): a Path or a string without '{' is a file to read."""
    if isinstance(source, Path) or "{" not in source:
        return read_source(source), file or str(source)
    return source, file or "<string>"


def prepare(
    source: str | Path,
    *,
    file: str | None = None,
    transforms: Iterable[Transform] = (),
    extra_rules: Sequence[LintRule] = (),
) -> tuple[Graph | None, list[Diagnostic]]:
    """Parse, transform and validate a pipeline.

    ``source`` is a path (``Path``, or a string with no ``{``) or DOT text.
    Returns the graph (None when the text does not parse) and all diagnostics;
    a syntax error is a single diagnostic with rule ``syntax``.

    Raises:
        PipelineError: when the file cannot be read (the CLI exits 2).
    """
    from attractor.pipeline.lint.registry import validate

    text, name = _source(source, file)
    try:
        graph = parse_dot(text, file=name)
    except PipelineSyntaxError as error:
        return None, [syntax_diagnostic(error)]
    graph = apply_transforms(graph, transforms)
    return graph, validate(graph, extra_rules)


def syntax_diagnostic(error: PipelineSyntaxError) -> Diagnostic:
    """A parse error as a ``syntax`` diagnostic."""
    return Diagnostic(
        "syntax", "error", error.message, error.file, error.line, error.column, fix=None
    )
