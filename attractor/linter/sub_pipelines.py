"""Sub-pipeline rules: a ``subgraph`` node names a pipeline file that lints clean.

The rule in the registry checks what one graph says (a ``dot_file`` that is
there). Following the files is :func:`follow_sub_pipelines`, which ``prepare``
calls with itself, so that this module needs no import of ``prepare``: it lints
each file a graph includes, reports its errors at the file's own lines, and
refuses a file that includes itself (directly or through others).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from attractor.dot.graph import Graph, Node
from attractor.dot.includes import (
    DOT_FILE,
    SUBGRAPH,
    resolve_dot_file,
    written_path,
)
from attractor.errors import Diagnostic
from attractor.linter.base import at, facts, rule_list

RULES, rule = rule_list()

#: The files being linted, outermost first (to refuse an include cycle).
_CHAIN: ContextVar[tuple[Path, ...]] = ContextVar("sub_pipeline_chain", default=())

Lint = Callable[[Path], "tuple[Graph | None, list[Diagnostic]]"]


def _subgraphs(graph: Graph) -> list[Node]:
    return facts(graph).of_type(SUBGRAPH)


@rule("sub_pipeline", "error")
def sub_pipeline(graph: Graph) -> list[Diagnostic]:
    """A sub-pipeline node (``shape=folder`` or ``type=subgraph``) names a pipeline file
    that exists and lints clean, and that does not include the pipeline again.

    The node runs that pipeline inline as a child run (docs/dialects.md,
    "Sub-pipelines"). A relative ``dot_file`` starts at this file's folder. The
    child is linted with the parent: each of its errors is reported here at the
    child's own file:line, and a file that includes itself, directly or
    through other files, is an error at the node that closes the cycle.
    """
    found: list[Diagnostic] = []
    for node in _subgraphs(graph):
        raw = written_path(node)
        if not raw:
            found.append(
                at(
                    "sub_pipeline",
                    "error",
                    node,
                    f"sub-pipeline node {node.id} names no pipeline file",
                    fix=f'write dot_file="child.dot" on {node.id} (relative to this file)',
                )
            )
        elif not resolve_dot_file(graph, raw).is_file():
            found.append(
                at(
                    "sub_pipeline",
                    "error",
                    node,
                    f'pipeline file "{raw}" of {node.id} is not a file '
                    f"(looked for {resolve_dot_file(graph, raw)})",
                    key=DOT_FILE,
                    fix="write the path relative to this file's folder (a relative dot_file "
                    "starts there, else in the working directory)",
                )
            )
    return found


def own_file(graph: Graph) -> Path | None:
    """The file ``graph`` was read from, when it was read from one."""
    if graph.folder is None or not graph.file or graph.file.startswith("<"):
        return None
    return (graph.folder / Path(graph.file).name).resolve()


@contextmanager
def _entered(path: Path) -> Iterator[None]:
    token = _CHAIN.set((*_CHAIN.get(), path))
    try:
        yield
    finally:
        _CHAIN.reset(token)


def follow_sub_pipelines(graph: Graph, lint: Lint) -> list[Diagnostic]:
    """The errors of every pipeline file ``graph`` includes, linted with ``lint``.

    Each error keeps its own file:line and is reported under ``sub_pipeline``,
    its rule and the node that includes it named in the message.
    """
    nodes = [n for n in graph.nodes() if written_path(n) and n.handler_type == SUBGRAPH]
    if not nodes:
        return []
    chain = _CHAIN.get()
    me = own_file(graph)
    if not chain and me is not None:
        chain = (me,)
    found: list[Diagnostic] = []
    seen: set[Path] = set()
    for node in nodes:
        path = resolve_dot_file(graph, written_path(node))
        if not path.is_file():
            continue  # the sub_pipeline rule says so
        real = path.resolve()
        if real in chain:
            found.append(_cycle(node, [*chain, real]))
            continue
        if real in seen:
            continue
        seen.add(real)
        token = _CHAIN.set(chain)
        try:
            with _entered(real):
                _, diagnostics = lint(path)
        finally:
            _CHAIN.reset(token)
        found.extend(_from_child(node, d) for d in diagnostics if d.is_error)
    return found


def _cycle(node: Node, chain: list[Path]) -> Diagnostic:
    shown = " -> ".join(p.name for p in chain)
    return at(
        "sub_pipeline",
        "error",
        node,
        f"sub-pipeline {node.id} includes {written_path(node)}, which leads back to "
        f"a pipeline being included ({shown}): it would run forever",
        key=DOT_FILE,
        fix="remove the include that closes the cycle, or loop with edges instead",
    )


def _from_child(node: Node, d: Diagnostic) -> Diagnostic:
    if d.rule == "sub_pipeline" and "(included by " in d.message:
        return d  # already named by the file that includes it
    return Diagnostic(
        "sub_pipeline",
        d.severity,
        f"{d.rule}: {d.message} (included by {node.id} of {Path(node.graph.file).name})",
        d.file,
        d.line,
        d.column,
        d.node,
        d.edge,
        d.fix,
    )
