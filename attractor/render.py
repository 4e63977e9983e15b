"""The pipeline drawn as a picture (SVG, PNG or PDF), optionally with a run's state.

Each node keeps the shape that names its type (start, exit, agent box, human
hexagon, tool parallelogram...), edges show their labels and conditions, and
the pipeline's subgraphs that are clusters (named ``cluster...``) or carry a
label are drawn as boxes around their nodes. Given a
:class:`~attractor.runview.inventory.RunState`, each node is filled by its
state and shows its visits and time, the route the run took is drawn bold
(the edges it did not take fade), and the current node (running now, or where
the run ended) has a thick outline.

In SVG each node's group has the id ``node-ID`` and the classes
``node state-STATE``, so a page can recolour it as events arrive.

Layout and drawing use pygraphviz, whose wheels carry Graphviz itself; it is
imported only when a picture is drawn.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.errors import UsageError

if TYPE_CHECKING:
    from attractor.dot.graph import Edge, Graph, Node
    from attractor.runview.inventory import NodeState, RunState

#: Formats ``attractor graph -o`` writes, by file suffix.
FORMATS = ("svg", "png", "pdf")

#: Resolution of a PNG (Graphviz's own is 96): a picture that reads on a
#: high-density screen and in a README.
PNG_DPI = "150"
#: Outline of the current node: running now, or where a run stopped or failed.
CURRENT_COLOURS = {"running": "#f59e0b", "fail": "#dc2626", "success": "#15803d"}
_CURRENT_DEFAULT = "#7c3aed"
_FADED_EDGE = "#a1a1aa"

#: Fill colour of a node in each state (the web page uses the same ones).
STATE_COLOURS = {
    "pending": "#f4f4f5",
    "running": "#93c5fd",
    "success": "#86efac",
    "partial": "#fde68a",
    "fail": "#fca5a5",
    "skipped": "#d4d4d8",
    "retry": "#fdba74",
    "stopped": "#d8b4fe",
}
_ROUTE_COLOUR = "#1d4ed8"
_NODE_SHAPES = {"": "box"}


def render(graph: Graph, state: RunState | None = None, fmt: str = "svg") -> bytes:
    """The picture of ``graph`` (with ``state``'s colours) in ``fmt``.

    Raises:
        UsageError: ``fmt`` is not one of :data:`FORMATS`.
    """
    if fmt not in FORMATS:
        raise UsageError(f"cannot draw {fmt!r}; choose one of {', '.join(FORMATS)}")
    picture = to_agraph(graph, state)
    if fmt == "png":
        picture.graph_attr["dpi"] = PNG_DPI
    picture.layout(prog="dot")
    data: bytes = picture.draw(format=fmt)
    return data


def to_agraph(graph: Graph, state: RunState | None = None) -> Any:
    """The pygraphviz graph to lay out: nodes, edges and their looks."""
    import pygraphviz

    picture = pygraphviz.AGraph(directed=True, strict=False, name=graph.name)
    picture.graph_attr.update(
        rankdir=str(graph.get("rankdir") or "TB"),
        label=_plain(_escape(_title(graph, state))),
        labelloc="t",
        fontname="Helvetica",
        fontsize="16",
        bgcolor="white",
        pad="0.3",
        nodesep="0.5",
        ranksep="0.55",
    )
    picture.node_attr.update(fontname="Helvetica", fontsize="13", style="filled", margin="0.2,0.08")
    picture.edge_attr.update(fontname="Helvetica", fontsize="11", color="#52525b")
    current = _current_node(state)
    for node in graph.nodes():
        node_state = state.nodes.get(node.id) if state is not None else None
        look = _node_look(node, node_state)
        if node.id == current and node_state is not None:
            _mark_current(look, node_state.state)
        picture.add_node(node.id, **look)
    taken = _route_edges(state)
    for number, edge in enumerate(graph.edges()):
        look = _edge_look(edge, (edge.source, edge.target) in taken)
        if state is not None and "class" not in look:
            look.update(color=_FADED_EDGE, fontcolor="#71717a")
        picture.add_edge(edge.source, edge.target, key=str(number), **look)
    _add_clusters(graph, picture)
    _add_sub_pipelines(picture, graph, "", 0, _Budget())
    return picture


def _current_node(state: RunState | None) -> str | None:
    """The node running now; for a run that is over, the node it ended at."""
    if state is None:
        return None
    running = [n.id for n in state.nodes.values() if n.state == "running"]
    if running:
        return running[0]
    return state.info.current_node


def _mark_current(look: dict[str, str], state: str) -> None:
    look.update(
        penwidth="3.5",
        color=CURRENT_COLOURS.get(state, _CURRENT_DEFAULT),
        **{"class": f"{look['class']} current"},
    )


def _add_clusters(graph: Graph, picture: Any) -> None:
    """The pipeline's clusters and labelled subgraphs, drawn as boxes around their nodes.

    The graph model keeps no subgraphs (only the classes their labels give
    nodes), so they are read from the pipeline's DOT text, its keywords in
    attribute values quoted (``type=subgraph`` is ours, not Graphviz's); a
    text Graphviz cannot read draws no boxes.
    """
    import pygraphviz

    from attractor.dot.formatter import graphviz_text

    if not graph.source:
        return
    try:
        source = pygraphviz.AGraph(string=graphviz_text(graph.source))
    except (pygraphviz.DotError, ValueError, TypeError):
        return
    counter = iter(range(1, 1 << 30))
    _copy_clusters(source, picture, {n.id for n in graph.nodes()}, counter)


def _copy_clusters(source: Any, target: Any, known: set[str], counter: Any) -> None:
    for sub in source.subgraphs():
        label = str(sub.graph_attr.get("label") or "")
        members = [str(n) for n in sub.nodes() if str(n) in known]
        if (str(sub.name).startswith("cluster") or label) and members:
            box = target.add_subgraph(
                members,
                name=f"cluster_{next(counter)}",
                label=_plain(_escape(label)),
                style="rounded,dashed",
                color="#71717a",
                fontcolor="#3f3f46",
                fontsize="12",
                labeljust="l",
            )
            _copy_clusters(sub, box, known, counter)
        else:
            _copy_clusters(sub, target, known, counter)


#: Sub-pipelines drawn inside sub-pipelines, at most (lint refuses a cycle).
_MAX_DEPTH = 8
#: Nodes of sub-pipelines drawn in one picture, at most: a few small files that each
#: run the next one several times over would otherwise make a picture of millions of
#: nodes (a step may write them), whose layout takes a server's drawing for hours.
MAX_CHILD_NODES = 500


class _Budget:
    """What one picture may still draw of its sub-pipelines, and the child pipelines
    read so far (one file run by several nodes is read once)."""

    def __init__(self) -> None:
        self.left = MAX_CHILD_NODES
        self.read: dict[Path, Graph | None] = {}
        #: Whether a sub-pipeline was left out (the rest are not looked at).
        self.spent = False

    def child(self, path: Path) -> Graph | None:
        from attractor.linter.prepare import prepare

        if path not in self.read:
            self.read[path] = prepare(path, file=str(path))[0]
        return self.read[path]


def _add_sub_pipelines(
    picture: Any, graph: Graph, prefix: str, depth: int, budget: _Budget
) -> None:
    """Each sub-pipeline's graph drawn in a dashed box beside its node, its nodes
    named ``NODE/CHILD`` and a dashed edge from the node to the child's start; past
    :data:`MAX_CHILD_NODES`, the box holds one note of what was left out."""
    from attractor.dot.includes import resolve_dot_file, sub_pipeline_nodes, written_path

    if depth >= _MAX_DEPTH:
        return
    for node in sub_pipeline_nodes(graph):
        if budget.spent:
            return
        path = resolve_dot_file(graph, written_path(node)) if written_path(node) else None
        if path is None or not path.is_file():
            continue
        child = budget.child(path)
        if child is None:
            continue
        inner = f"{prefix}{node.id}/"
        box = _plain(_escape(f"{node.id}: {written_path(node)}"))
        if len(child.nodes()) > budget.left:
            budget.spent = True
            note = f"not drawn: more sub-pipeline nodes than a picture holds ({MAX_CHILD_NODES})"
            picture.add_node(inner, label=note, shape="note", id=f"node-{inner}")
            picture.add_subgraph([inner], name=f"cluster_{inner}", label=box, style="dashed")
            picture.add_edge(prefix + node.id, inner, style="dashed", label="runs")
            return
        budget.left -= len(child.nodes())
        for child_node in child.nodes():
            look = _node_look(child_node, None)
            look["id"] = f"node-{inner}{child_node.id}"
            picture.add_node(inner + child_node.id, **look)
        for number, edge in enumerate(child.edges()):
            look = _edge_look(edge, False)
            look["id"] = f"edge-{inner}{edge.source}-{edge.target}"
            picture.add_edge(inner + edge.source, inner + edge.target, key=str(number), **look)
        picture.add_subgraph(
            [inner + n.id for n in child.nodes()],
            name=f"cluster_{inner}",
            label=box,
            style="dashed",
        )
        start = child.start_node()
        if start is not None:
            picture.add_edge(prefix + node.id, inner + start.id, style="dashed", label="runs")
        _add_sub_pipelines(picture, child, inner, depth + 1, budget)


def _title(graph: Graph, state: RunState | None) -> str:
    if state is None:
        return graph.name
    return f"{graph.name} - {state.info.id} ({state.info.status})"


def _node_look(node: Node, state: NodeState | None) -> dict[str, str]:
    name = state.state if state is not None else "pending"
    lines = [node.label or node.id]
    if state is not None:
        lines += _state_lines(state)
    return {
        "id": f"node-{node.id}",
        "class": f"state-{name}",
        "shape": _NODE_SHAPES.get(node.shape, node.shape),
        "label": _plain("\\n".join(_escape(line) for line in lines)),
        "fillcolor": STATE_COLOURS.get(name, STATE_COLOURS["pending"]),
        "tooltip": _escape(f"{node.id} ({node.handler_type}): {name}"),
    }


def _state_lines(state: NodeState) -> list[str]:
    facts = []
    if state.visits > 1:
        facts.append(f"x{state.visits}")
    if state.duration > 0:
        facts.append(_seconds(state.duration))
    lines = [" ".join(facts)] if facts else []
    if state.turn:
        lines.append(state.turn)
    return lines


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.1f}s"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes}m{seconds:02d}s"


def _edge_look(edge: Edge, taken: bool) -> dict[str, str]:
    parts = [edge.label] if edge.label else []
    if edge.condition:
        parts.append(f"[{edge.condition}]")
    look = {
        "id": f"edge-{edge.source}-{edge.target}",
        "label": _plain(_escape(" ".join(parts))),
    }
    if taken:
        look.update(color=_ROUTE_COLOUR, penwidth="2.5", **{"class": "taken"})
    return look


def _route_edges(state: RunState | None) -> set[tuple[str, str]]:
    if state is None:
        return set()
    route = state.route
    return set(zip(route, route[1:], strict=False))


def _escape(text: str) -> str:
    """Text as a Graphviz label shows it literally (backslash escapes undone)."""
    return text.replace("\\", "\\\\").replace("\n", " ")


def _plain(label: str) -> str:
    """``label`` as plain text, never markup: pygraphviz passes a label that starts
    with ``<`` and ends with ``>`` to Graphviz as an HTML label, whose ``HREF`` would
    become a link in the SVG (a script, on a page) and whose ``IMG`` would have
    Graphviz read a file. A trailing space keeps it text."""
    return f"{label} " if label.startswith("<") and label.endswith(">") else label
