"""One document linted as ``attractor lint`` lints it, with LSP ranges.

A child pipeline (``stack.child_dotfile``) is linted too: each of its findings
is reported on the attribute that names it, with the child's own position as
related information, so a broken child shows in the parent as you type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from pathlib import Path

from lsprotocol import types as lsp

from attractor.dot.graph import Graph, Node
from attractor.dot.parser import parse_dot, read_source
from attractor.errors import Diagnostic, PipelineError, PipelineSyntaxError
from attractor.linter.base import closed_handler_types
from attractor.linter.prepare import prepare, syntax_diagnostic
from attractor.lsp.text import offset_of, position_of, token_end
from attractor.valueclass import mutable

#: The rules reference of a source checkout (a wheel ships no docs: then the
#: client's ``rulesDocs`` initialization option, else no link; hover has the text).
_CHECKOUT_DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
SOURCE = "attractor"
_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "info": lsp.DiagnosticSeverity.Information,
    "style": lsp.DiagnosticSeverity.Information,  # only --strict counts it
}
CHILD_KEY = "stack.child_dotfile"

#: Reads the current text of a file: the editor's buffer if it is open, else the disk.
Reader = Callable[[Path], str]


@mutable
class Analysis:
    """The result of linting one version of a document."""

    text: str
    file: str
    graph: Graph | None
    found: list[Diagnostic]
    diagnostics: list[lsp.Diagnostic] = field(default_factory=list)
    version: int | None = None


def default_docs_url() -> str | None:
    """Where rule links point unless the client says otherwise."""
    return _CHECKOUT_DOCS.as_uri() if _CHECKOUT_DOCS.is_file() else None


def lint_text(text: str, file: str) -> tuple[Graph | None, list[Diagnostic]]:
    """What ``attractor lint`` reports for ``text`` as the file ``file``."""
    with closed_handler_types():  # as on the command line: an unknown type is an error
        if "{" in text:
            # Prompt files start at the file's folder, as when lint reads the file.
            return prepare(text, file=file, folder=Path(file).resolve().parent)
        # prepare() would take a text without '{' for a path; it cannot parse anyway.
        try:
            parse_dot(text, file=file)
        except PipelineSyntaxError as error:
            return None, [syntax_diagnostic(error)]
        return None, []  # unreachable: a graph needs '{'


def analyze(
    text: str,
    file: str,
    *,
    read: Reader = read_source,
    version: int | None = None,
    docs: str | None = None,
) -> Analysis:
    """Lint ``text`` (and the child pipelines it names) into LSP diagnostics."""
    graph, found = lint_text(text, file)
    result = Analysis(text, file, graph, found, version=version)
    result.diagnostics = [
        to_lsp(d, text, docs=docs) if _same_file(d.file, file) else _elsewhere(d, text, docs)
        for d in found
    ]
    if graph is not None:
        result.diagnostics += child_diagnostics(graph, text, read, docs)
    return result


def _same_file(found: str, file: str) -> bool:
    return found == file or Path(found).resolve() == Path(file).resolve()


def _elsewhere(found: Diagnostic, text: str, docs: str | None) -> lsp.Diagnostic:
    """A finding in another file the pipeline reads (a prompt file): shown where the
    pipeline names that file (else at its top), pointing at the place in it."""
    name = Path(found.file).name
    at = text.find(name) if name else -1
    start = lsp.Position(*position_of(text, at)) if at >= 0 else lsp.Position(0, 0)
    end = lsp.Position(start.line, start.character + len(name)) if at >= 0 else start
    result = to_lsp(found, text, lsp.Range(start, end), docs=docs)
    result.message = f"{name}:{found.line}:{found.column}: {found.message}"
    inner = lsp.Position(max(found.line - 1, 0), max(found.column - 1, 0))
    where = lsp.Location(Path(found.file).resolve().as_uri(), lsp.Range(inner, inner))
    result.related_information = [
        lsp.DiagnosticRelatedInformation(where, found.message),
        *(result.related_information or []),
    ]
    result.data = None  # its fix is for the other file
    return result


def diagnostic_range(text: str, line: int, column: int) -> lsp.Range:
    """The range of the token a 1-based (line, column) points at."""
    if line <= 0:
        return lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    start = offset_of(text, line - 1, column - 1)
    end = token_end(text, start)
    if "\n" in text[start:end]:  # a multi-line value: underline its first line only
        end = text.index("\n", start)
    return lsp.Range(
        lsp.Position(line - 1, column - 1), lsp.Position(line - 1, column - 1 + end - start)
    )


def to_lsp(
    found: Diagnostic, text: str, where: lsp.Range | None = None, *, docs: str | None = None
) -> lsp.Diagnostic:
    """One lint diagnostic as the protocol's: rule id as code, fix as related information."""
    where = where or diagnostic_range(text, found.line, found.column)
    related = None
    if found.fix:
        uri = Path(found.file).resolve().as_uri()
        related = [lsp.DiagnosticRelatedInformation(lsp.Location(uri, where), f"fix: {found.fix}")]
    link = lsp.CodeDescription(href=f"{docs}#{found.rule}") if docs else None
    return lsp.Diagnostic(
        range=where,
        message=found.message,
        severity=_SEVERITY.get(found.severity, lsp.DiagnosticSeverity.Error),
        code=found.rule,
        code_description=link,
        source=SOURCE,
        related_information=related,
        data={"fix": found.fix, "node": found.node},
    )


def child_path(graph: Graph, value: str) -> Path:
    """Where a ``stack.child_dotfile`` value points (relative to the pipeline's folder)."""
    path = Path(value)
    return path if path.is_absolute() else Path(graph.file).resolve().parent / path


def child_diagnostics(
    graph: Graph, text: str, read: Reader, docs: str | None = None
) -> list[lsp.Diagnostic]:
    """The findings of every child pipeline, reported on the attribute naming it."""
    out: list[lsp.Diagnostic] = []
    seen: set[tuple[str, int, int]] = set()
    holders: list[Graph | Node] = [graph, *graph.nodes()]
    for holder in holders:
        value = holder.raw(CHILD_KEY)
        pos = holder.pos_of(CHILD_KEY)
        if not value or pos is None or (value, pos.line, pos.column) in seen:
            continue
        seen.add((value, pos.line, pos.column))
        path = child_path(graph, value.strip())
        try:
            child_text = read(path)
        except (PipelineError, OSError):
            continue  # the manager rule already says the file is missing
        where = diagnostic_range(text, pos.line, pos.column)
        for found in lint_text(child_text, str(path))[1]:
            out.append(_from_child(found, path, child_text, where, docs))
    return out


def _from_child(
    found: Diagnostic, path: Path, text: str, where: lsp.Range, docs: str | None
) -> lsp.Diagnostic:
    inner = diagnostic_range(text, found.line, found.column)
    result = to_lsp(found, text, where, docs=docs)
    result.message = f"child pipeline {path.name}:{found.line}:{found.column}: {found.message}"
    result.data = None  # its fix is for the child's file: no quick fix here
    related = [lsp.DiagnosticRelatedInformation(lsp.Location(path.as_uri(), inner), found.message)]
    if found.fix:
        related.append(
            lsp.DiagnosticRelatedInformation(
                lsp.Location(path.as_uri(), inner), f"fix: {found.fix}"
            )
        )
    result.related_information = related
    return result
