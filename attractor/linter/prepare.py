"""``prepare``: parse, transform and lint a pipeline in one call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot, read_source
from attractor.dot.transforms import Transform, apply_transforms
from attractor.errors import Diagnostic, PipelineSyntaxError
from attractor.linter.registry import LintRule, validate


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
