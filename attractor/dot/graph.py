"""The pipeline graph: plain dicts and adjacency lists behind typed Node and Edge views.

Attribute values are stored as the (unescaped) text the author wrote, with the
source position of every node, edge and attribute, so any diagnostic can point
at the file. Typed access goes through :mod:`attractor.dot.schema`. Reachability
(:meth:`Graph.descendants`, :meth:`Graph.ancestors`) and strongly connected
components (:func:`attractor.dot.scc.strongly_connected`) are small functions
over these lists; no graph library is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from attractor.dot.schema import SHAPE_TO_TYPE, Scope, typed_value


class SourcePos(NamedTuple):
    """Where something was written: file, 1-based line and column.

    A named tuple: a big pipeline holds one per attribute, and a tuple is built
    faster and takes less memory than a dataclass instance.
    """

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class _Item:
    """Storage shared by nodes, edges and the graph itself."""

    __slots__ = ("attrs", "attr_pos")

    def __init__(
        self, attrs: dict[str, str] | None = None, attr_pos: dict[str, SourcePos] | None = None
    ) -> None:
        self.attrs: dict[str, str] = {} if attrs is None else attrs
        self.attr_pos: dict[str, SourcePos] = {} if attr_pos is None else attr_pos

    def set(self, key: str, value: str, pos: SourcePos | None) -> None:
        self.attrs[key] = value
        if pos is not None:
            self.attr_pos[key] = pos


class _NodeData:
    __slots__ = ("item", "pos", "declared", "out", "into")

    def __init__(self, item: _Item, pos: SourcePos, declared: bool) -> None:
        self.item = item
        self.pos = pos
        self.declared = declared
        #: Outgoing and incoming edges, each list in declaration order.
        self.out: list[_EdgeData] = []
        self.into: list[_EdgeData] = []


class _EdgeData:
    __slots__ = ("source", "target", "item", "pos", "order")

    def __init__(self, source: str, target: str, item: _Item, pos: SourcePos, order: int) -> None:
        self.source = source
        self.target = target
        self.item = item
        self.pos = pos
        self.order = order


class _View:
    """Typed attribute access over an _Item."""

    scope: Scope
    _item: _Item

    @property
    def attrs(self) -> dict[str, str]:
        """Raw attribute text by key (mutable for nodes and the graph: transforms write
        there; an edge is written through :meth:`Edge.set`)."""
        return self._item.attrs

    @property
    def attr_pos(self) -> dict[str, SourcePos]:
        return self._item.attr_pos

    def raw(self, key: str) -> str | None:
        return self._item.attrs.get(key)

    def get(self, key: str) -> Any:
        """Typed value of ``key``: parsed by the schema, default when absent/invalid."""
        return typed_value(key, self.scope, self._item.attrs.get(key))

    def has(self, key: str) -> bool:
        return key in self._item.attrs

    def set(self, key: str, value: str, pos: SourcePos | None = None) -> None:
        self._item.set(key, value, pos)


class Node(_View):
    """A typed view of one node."""

    scope: Scope = "node"

    def __init__(self, graph: Graph, node_id: str) -> None:
        self.graph = graph
        self.id = node_id
        data = graph._nodes[node_id]
        self._item = data.item
        self.pos: SourcePos = data.pos
        self.declared: bool = data.declared

    def __repr__(self) -> str:
        return f"Node({self.id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other.graph is self.graph and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def label(self) -> str:
        return self._item.attrs.get("label") or self.id

    @property
    def shape(self) -> str:
        return str(self.get("shape"))

    @property
    def prompt(self) -> str:
        return str(self.get("prompt"))

    @property
    def handler_type(self) -> str:
        """Explicit ``type``, else the type mapped from ``shape``, else codergen."""
        explicit = self._item.attrs.get("type", "").strip()
        if explicit:
            return explicit
        return SHAPE_TO_TYPE.get(self.shape, "codergen")

    @property
    def classes(self) -> list[str]:
        return [c.strip() for c in str(self.get("class")).split(",") if c.strip()]

    @property
    def timeout(self) -> float | None:
        value = self.get("timeout")
        return float(value) if value is not None else None

    def outgoing(self) -> list[Edge]:
        return self.graph.outgoing(self.id)

    def incoming(self) -> list[Edge]:
        return self.graph.incoming(self.id)


class Edge(_View):
    """A typed view of one edge."""

    scope: Scope = "edge"

    def __init__(self, graph: Graph, data: _EdgeData) -> None:
        self.graph = graph
        self._data = data
        self.source = data.source
        self.target = data.target
        self._item = data.item
        self.pos: SourcePos = data.pos
        #: Declaration order among all edges of the graph.
        self.order: int = data.order

    def __repr__(self) -> str:
        return f"Edge({self.source!r} -> {self.target!r})"

    @property
    def label(self) -> str:
        return self._item.attrs.get("label", "")

    @property
    def condition(self) -> str:
        return self._item.attrs.get("condition", "").strip()

    @property
    def weight(self) -> int:
        return int(self.get("weight"))

    def set(self, key: str, value: str, pos: SourcePos | None = None) -> None:
        """Set one attribute of this edge only.

        The edges of one chain statement (``a -> b -> c [weight=2]``) share
        their attribute dicts until one of them is set: ``attrs`` is for reading.
        """
        own = _Item(dict(self._item.attrs), dict(self._item.attr_pos))
        self._item = self._data.item = own
        own.set(key, value, pos)


class Graph(_View):
    """A parsed pipeline: nodes in the order first mentioned, edges in declaration order."""

    scope: Scope = "graph"

    def __init__(self, name: str, *, file: str = "<string>", source: str = "") -> None:
        self.name = name
        self.file = file
        self.source = source
        self.pos = SourcePos(file, 1, 1)
        self._nodes: dict[str, _NodeData] = {}
        self._edges: list[_EdgeData] = []
        self._item = _Item()
        #: (node id, first declaration, repeated declaration) for duplicate_node.
        self.duplicates: list[tuple[str, SourcePos, SourcePos]] = []

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self._nodes)} nodes)"

    # -- building -------------------------------------------------------------

    def add_node(
        self,
        node_id: str,
        attrs: dict[str, str],
        pos: SourcePos,
        attr_pos: dict[str, SourcePos] | None = None,
        *,
        declared: bool = True,
    ) -> Node:
        """Add or merge a node. A second declaration merges (later wins) and is recorded."""
        data = self._nodes.get(node_id)
        if data is None:
            item = _Item(dict(attrs), dict(attr_pos or {}))
            self._nodes[node_id] = _NodeData(item, pos, declared)
        else:
            item = data.item
            if declared and data.declared:
                self.duplicates.append((node_id, data.pos, pos))
            if declared and not data.declared:
                data.declared = True
                data.pos = pos
            item.attrs.update(attrs)
            item.attr_pos.update(attr_pos or {})
        return Node(self, node_id)

    def add_edge(
        self,
        source: str,
        target: str,
        attrs: dict[str, str],
        pos: SourcePos,
        attr_pos: dict[str, SourcePos] | None = None,
    ) -> Edge:
        """Add an edge; endpoints not yet seen are created as undeclared nodes."""
        for end in (source, target):
            if end not in self._nodes:
                self._nodes[end] = _NodeData(_Item(), pos, False)
        data = self._link(source, target, _Item(dict(attrs), dict(attr_pos or {})), pos)
        return Edge(self, data)

    def _link(self, source: str, target: str, item: _Item, pos: SourcePos) -> _EdgeData:
        data = _EdgeData(source, target, item, pos, len(self._edges))
        self._edges.append(data)
        self._nodes[source].out.append(data)
        self._nodes[target].into.append(data)
        return data

    def add_new_node(
        self,
        node_id: str,
        attrs: dict[str, str],
        pos: SourcePos,
        attr_pos: dict[str, SourcePos],
        *,
        declared: bool = True,
    ) -> None:
        """Add a node that is not in the graph yet, keeping ``attrs`` and ``attr_pos``.

        The parser's fast path: no copies, no merge check, no view returned.
        """
        self._nodes[node_id] = _NodeData(_Item(attrs, attr_pos), pos, declared)

    def add_edges(
        self,
        edges: Iterable[tuple[str, str, SourcePos]],
        attrs: dict[str, str],
        attr_pos: dict[str, SourcePos],
    ) -> None:
        """Add edges (endpoints must exist) that share one attribute list, such as a chain.

        The edges share one copy of the attributes (a big pipeline has many
        chains; :meth:`Edge.set` unshares); no views are returned.
        """
        link = self._link
        item = _Item(dict(attrs), dict(attr_pos))
        for source, target, pos in edges:
            link(source, target, item, pos)

    # -- reading --------------------------------------------------------------

    @property
    def goal(self) -> str:
        return str(self.get("goal"))

    @property
    def label(self) -> str:
        return self._item.attrs.get("label", "")

    def has_node(self, node_id: str) -> bool:
        return node_id in self._nodes

    def node(self, node_id: str) -> Node:
        """The node ``node_id``; raises KeyError when absent."""
        if node_id not in self._nodes:
            raise KeyError(node_id)
        return Node(self, node_id)

    def node_ids(self) -> list[str]:
        """Every node id, in the order first mentioned."""
        return list(self._nodes)

    def nodes(self) -> list[Node]:
        """All nodes in the order they were first mentioned."""
        return [Node(self, n) for n in self._nodes]

    def edges(self) -> list[Edge]:
        """All edges in declaration order."""
        return [Edge(self, e) for e in self._edges]

    def outgoing(self, node_id: str) -> list[Edge]:
        """Outgoing edges of ``node_id`` in declaration order."""
        return [Edge(self, e) for e in self._nodes[node_id].out]

    def incoming(self, node_id: str) -> list[Edge]:
        return [Edge(self, e) for e in self._nodes[node_id].into]

    def successors(self, node_id: str) -> Iterator[str]:
        """Targets of the outgoing edges of ``node_id`` (repeated for parallel edges)."""
        return (e.target for e in self._nodes[node_id].out)

    def descendants(self, node_id: str) -> set[str]:
        """Ids reachable from ``node_id`` by one or more edges, never ``node_id`` itself."""
        return self._reach(node_id, "out", "target")

    def ancestors(self, node_id: str) -> set[str]:
        """Ids from which ``node_id`` can be reached, never ``node_id`` itself."""
        return self._reach(node_id, "into", "source")

    def _reach(self, node_id: str, side: str, end: str) -> set[str]:
        nodes = self._nodes
        seen: set[str] = set()
        stack = [node_id]
        while stack:
            for edge in getattr(nodes[stack.pop()], side):
                other = getattr(edge, end)
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        seen.discard(node_id)
        return seen

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes())

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def start_candidates(self) -> list[Node]:
        """Nodes that look like a start: shape Mdiamond, else id start/Start."""
        by_shape = [n for n in self.nodes() if n.shape == "Mdiamond"]
        if by_shape:
            return by_shape
        return [n for n in self.nodes() if n.id in ("start", "Start")]

    def exit_candidates(self) -> list[Node]:
        """Nodes that look like an exit: shape Msquare, else id exit/end."""
        by_shape = [n for n in self.nodes() if n.shape == "Msquare"]
        if by_shape:
            return by_shape
        return [n for n in self.nodes() if n.id in ("exit", "end", "Exit", "End")]

    def start_node(self) -> Node | None:
        found = self.start_candidates()
        return found[0] if len(found) == 1 else None

    def exit_ids(self) -> set[str]:
        """Every exit node's id (by shape or id, or by type), in one pass over the graph."""
        by_shape = {n.id for n in self.exit_candidates()}
        return by_shape | {n.id for n in self.nodes() if n.handler_type == "exit"}

    def is_exit(self, node: Node) -> bool:
        """One node's question; ask :meth:`exit_ids` once when checking many."""
        return node.id in self.exit_ids()


_ACCELERATOR_PREFIX = re.compile(r"^(\[\w\]\s*|\w\)\s*|\w\s+-\s+)")


def normalize_label(label: str) -> str:
    """Lowercase, trimmed, without an accelerator prefix (``[Y] ``, ``Y) ``, ``Y - ``)."""
    text = label.strip()
    text = _ACCELERATOR_PREFIX.sub("", text, count=1)
    return text.strip().lower()
