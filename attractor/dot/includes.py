"""Sub-pipelines: a node that runs another pipeline file inline.

A node of type ``subgraph`` (``shape=folder``, or ``type=subgraph``) names a
pipeline file in ``dot_file`` (``graph``, ``graph_ref`` and ``sub_pipeline`` are
aliases; ``type=sub_pipeline`` and ``type=include`` are aliases of the type). A
relative path starts at the folder of the pipeline that names it (else the
working directory, as the manager loop's child file does); a run directory's
copy of a pipeline names them relative to the file the run started from
(:attr:`Graph.include_folder`).
"""

from __future__ import annotations

from pathlib import Path

from attractor.dot.graph import Graph, Node

#: The handler type of a node that runs another pipeline inline.
SUBGRAPH = "subgraph"
#: The attribute that names its pipeline file.
DOT_FILE = "dot_file"


def sub_pipeline_nodes(graph: Graph) -> list[Node]:
    """The nodes of ``graph`` that run another pipeline file, in declaration order."""
    return [n for n in graph.nodes() if n.handler_type == SUBGRAPH]


def written_path(node: Node) -> str:
    """The node's ``dot_file`` as written (stripped; empty when it names none)."""
    return str(node.attrs.get(DOT_FILE, "")).strip()


def include_base(graph: Graph) -> Path:
    """Where a relative ``dot_file`` of ``graph`` starts."""
    return graph.include_folder or graph.folder or Path.cwd()


def resolve_dot_file(graph: Graph, raw: str) -> Path:
    """The file a ``dot_file`` written as ``raw`` in ``graph`` names (not checked).

    A relative path is looked for beside the pipeline, then in the current
    directory (some engines write paths from the project's root); when it is in
    neither, the path beside the pipeline is returned (the one to name in errors).
    """
    path = Path(raw).expanduser()
    if path.is_absolute():
        return path
    beside = include_base(graph) / path
    if beside.exists() or not (Path.cwd() / path).exists():
        return beside
    return Path.cwd() / path
