"""The pipeline drawn as a picture (SVG, PNG or PDF), optionally with a run's state.

Each node keeps the shape that names its type (start, exit, agent box, human
hexagon, tool parallelogram...), edges show their labels and conditions. Given
a :class:`~attractor.runview.inventory.RunState`, each node is filled by its
state, shows its visits and time, and the route the run took is drawn bold.

In SVG each node's group has the id ``node-ID`` and the classes
``node state-STATE``, so a page can recolour it as events arrive.

Layout and drawing use pygraphviz, whose wheels carry Graphviz itself; it is
imported only when a picture is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attractor.errors import UsageError

if TYPE_CHECKING:
    from attractor.dot.graph import Edge, Graph, Node
    from attractor.runview.inventory import NodeState, RunState

#: Formats ``attractor graph -o`` writes, by file suffix.
FORMATS = ("svg", "png", "pdf")

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
    picture.layout(prog="dot")
    data: bytes = picture.draw(format=fmt)
    return data


def to_agraph(graph: Graph, state: RunState | None = None) -> Any:
    """The pygraphviz graph to lay out: nodes, edges and their looks."""
    import pygraphviz

    picture = pygraphviz.AGraph(directed=True, strict=False, name=graph.name)
    picture.graph_attr.update(
        rankdir=str(graph.get("rankdir") or "TB"),
        label=_escape(_title(graph, state)),
        labelloc="t",
        fontname="Helvetica",
        fontsize="14",
        bgcolor="white",
    )
    picture.node_attr.update(fontname="Helvetica", fontsize="11", style="filled")
    picture.edge_attr.update(fontname="Helvetica", fontsize="9", color="#52525b")
    for node in graph.nodes():
        node_state = state.nodes.get(node.id) if state is not None else None
        picture.add_node(node.id, **_node_look(node, node_state))
    taken = _route_edges(state)
    for number, edge in enumerate(graph.edges()):
        look = _edge_look(edge, (edge.source, edge.target) in taken)
        picture.add_edge(edge.source, edge.target, key=str(number), **look)
    return picture


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
        "label": "\\n".join(_escape(line) for line in lines),
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
        "label": _escape(" ".join(parts)),
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
