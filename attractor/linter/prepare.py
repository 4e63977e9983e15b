"""``prepare``: parse, transform and lint a pipeline in one call."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot, read_source
from attractor.dot.transforms import Transform, apply_transforms
from attractor.errors import Diagnostic, PipelineSyntaxError, ValidationError
from attractor.linter.registry import LintRule, validate
from attractor.linter.sub_pipelines import follow_sub_pipelines


def _source(source: str | Path, file: str | None) -> tuple[str, str, Path | None]:
    """(text, file name, folder): a Path or a string without '{' is a file to read."""
    if isinstance(source, Path) or "{" not in source:
        return read_source(source), file or str(source), Path(source).resolve().parent
    return source, file or "<string>", None


def prepare(
    source: str | Path,
    *,
    file: str | None = None,
    transforms: Iterable[Transform] = (),
    extra_rules: Sequence[LintRule] = (),
    folder: Path | None = None,
    include_folder: Path | None = None,
) -> tuple[Graph | None, list[Diagnostic]]:
    """Parse, transform and validate a pipeline.

    ``source`` is a path (``Path``, or a string with no ``{``) or DOT text.
    ``folder`` is where the paths DOT text names start (an editor's unsaved
    buffer of a file); a file's own folder is used for a path.
    ``include_folder`` is where sub-pipeline files start when it is not that
    folder (a run directory's copy of a pipeline: the original file's folder).
    Each sub-pipeline file is linted too: its errors come back at its own
    file:line (rule ``sub_pipeline``), and a file that includes itself is one.
    Returns the graph (None when the text does not parse) and all diagnostics;
    a syntax error is a single diagnostic with rule ``syntax``.

    Raises:
        PipelineError: when the file cannot be read (the CLI exits 2).
    """
    text, name, own_folder = _source(source, file)
    try:
        graph = parse_dot(text, file=name)
    except PipelineSyntaxError as error:
        return None, [syntax_diagnostic(error)]
    # Paths the pipeline names (prompt files) start at its file's folder; a
    # pipeline given as text has the folder the caller names, if any.
    graph.folder = own_folder or folder
    graph.include_folder = include_folder
    graph = apply_transforms(graph, transforms)
    found = validate(graph, extra_rules)
    return graph, found + follow_sub_pipelines(graph, _child_lint)


def _child_lint(path: Path) -> tuple[Graph | None, list[Diagnostic]]:
    """A sub-pipeline file linted as a run would load it."""
    return prepare(path, file=str(path))


def prepare_checked(
    path: Path, *, include_folder: Path | None = None
) -> tuple[Graph, list[Diagnostic]]:
    """Parse, transform and lint the file ``path`` for a run: the graph and its warnings.

    The one check a run's pipeline passes (a new run, a resume, a child run).

    Raises:
        ValidationError: the pipeline has lint errors (or does not parse).
        PipelineError: the file cannot be read.
    """
    graph, diagnostics = prepare(path, file=str(path), include_folder=include_folder)
    if graph is None or any(d.is_error for d in diagnostics):
        raise ValidationError(diagnostics)
    return graph, diagnostics


def syntax_diagnostic(error: PipelineSyntaxError) -> Diagnostic:
    """A parse error as a ``syntax`` diagnostic, with what to write instead as its fix."""
    message, fix = syntax_fix(error.message)
    return Diagnostic("syntax", "error", message, error.file, error.line, error.column, fix=fix)


_EXPECTED = re.compile(r"^expected (?P<what>.+?), found (?P<found>.+)$")


def syntax_fix(message: str) -> tuple[str, str]:
    """Split a parser message into what is wrong and what to do.

    Parser messages either say both (``undirected edge '--' is not supported;
    use '->'``) or name what was expected (``expected a node id after '->',
    found '['``); anything else gets a pointer to the DOT subset.
    """
    problem, sep, advice = message.partition("; ")
    if sep:
        return problem, advice
    match = _EXPECTED.match(message)
    if match is not None:
        return message, f"write {match.group('what')} here"
    return message, "rewrite it in the DOT subset attractor reads (docs/rules.md#syntax)"
