"""The pipeline graph: a networkx MultiDiGraph behind typed Node and Edge views.

Attribute values are stored as the (unescaped) text the author wrote, with the
source position of every node, edge and attribute, so any diagnostic can point
at the file. Typed access goes through :mod:`attractor.dot.schema`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from attractor.dot.schema import SHAPE_TO_TYPE, Scope, typed_value


@dataclass(frozen=True)
class SourcePos:
    """Where something was written: file, 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass
class _Item:
    """Storage shared by nodes, edges and the graph itself."""

    attrs: dict[str, str] = field(default_factory=dict)
    attr_pos: dict[str, SourcePos] = field(default_factory=dict)

    def set(self, key: str, value: str, pos: SourcePos | None) -> None:
        self.attrs[key] = value
        if pos is not None:
            self.attr_pos[key] = pos


class _View:
    """Typed attribute access over an _Item."""

    scope: Scope
    _item: _Item

    @property
    def attrs(self) -> dict[str, str]:
        """Raw attribute text by key (mutable: transforms write here)."""
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
        data = graph.nx.nodes[node_id]
        self._item = data["item"]
        self.pos: SourcePos = data["pos"]
        self.declared: bool = data["declared"]

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

    def __init__(self, graph: Graph, source: str, target: str, key: int) -> None:
        self.graph = graph
        self.source = source
        self.target = target
        self.key = key
        data = graph.nx.edges[source, target, key]
        self._item = data["item"]
        self.pos: SourcePos = data["pos"]
        self.order: int = data["order"]

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


class Graph(_View):
    """A parsed pipeline. ``graph.nx`` is the underlying networkx MultiDiGraph."""

    scope: Scope = "graph"

    def __init__(self, name: str, *, file: str = "<string>", source: str = "") -> None:
        self.name = name
        self.file = file
        self.source = source
        self.pos = SourcePos(file, 1, 1)
        self.nx: Any = nx.MultiDiGraph()
        self._item = _Item()
        self._edge_order = 0
        #: (node id, first declaration, repeated declaration) for duplicate_node.
        self.duplicates: list[tuple[str, SourcePos, SourcePos]] = []

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {self.nx.number_of_nodes()} nodes)"

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
        data = self.nx.nodes.get(node_id)
        if data is None:
            item = _Item(dict(attrs), dict(attr_pos or {}))
            self.nx.add_node(node_id, item=item, pos=pos, declared=declared)
        else:
            item = data["item"]
            if declared and data["declared"]:
                self.duplicates.append((node_id, data["pos"], pos))
            if declared and not data["declared"]:
                data["declared"] = True
                data["pos"] = pos
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
            if end not in self.nx:
                self.nx.add_node(end, item=_Item(), pos=pos, declared=False)
        item = _Item(dict(attrs), dict(attr_pos or {}))
        key = self.nx.add_edge(source, target, item=item, pos=pos, order=self._edge_order)
        self._edge_order += 1
        return Edge(self, source, target, key)

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
        self.nx.add_node(node_id, item=_Item(attrs, attr_pos), pos=pos, declared=declared)

    def add_edges(
        self,
        edges: Iterable[tuple[str, str, SourcePos]],
        attrs: dict[str, str],
        attr_pos: dict[str, SourcePos],
    ) -> None:
        """Add edges (endpoints must exist) that share one attribute list, such as a chain.

        Each edge gets its own copy of the attributes; no views are returned.
        """
        add = self.nx.add_edge
        order = self._edge_order
        for source, target, pos in edges:
            add(source, target, item=_Item(dict(attrs), dict(attr_pos)), pos=pos, order=order)
            order += 1
        self._edge_order = order

    # -- reading --------------------------------------------------------------

    @property
    def goal(self) -> str:
        return str(self.get("goal"))

    @property
    def label(self) -> str:
        return self._item.attrs.get("label", "")

    def has_node(self, node_id: str) -> bool:
        return node_id in self.nx

    def node(self, node_id: str) -> Node:
        """The node ``node_id``; raises KeyError when absent."""
        if node_id not in self.nx:
            raise KeyError(node_id)
        return Node(self, node_id)

    def nodes(self) -> list[Node]:
        """All nodes in the order they were first mentioned."""
        return [Node(self, n) for n in self.nx.nodes]

    def edges(self) -> list[Edge]:
        """All edges in declaration order."""
        return sorted(
            (Edge(self, u, v, k) for u, v, k in self.nx.edges(keys=True)),
            key=lambda e: e.order,
        )

    def outgoing(self, node_id: str) -> list[Edge]:
        """Outgoing edges of ``node_id`` in declaration order."""
        edges = [Edge(self, u, v, k) for u, v, k in self.nx.out_edges(node_id, keys=True)]
        return sorted(edges, key=lambda e: e.order)

    def incoming(self, node_id: str) -> list[Edge]:
        edges = [Edge(self, u, v, k) for u, v, k in self.nx.in_edges(node_id, keys=True)]
        return sorted(edges, key=lambda e: e.order)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes())

    def __len__(self) -> int:
        return int(self.nx.number_of_nodes())

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

    def is_exit(self, node: Node) -> bool:
        return node in self.exit_candidates() or node.handler_type == "exit"


_ACCELERATOR_PREFIX = re.compile(r"^(\[\w\]\s*|\w\)\s*|\w\s+-\s+)")


def normalize_label(label: str) -> str:
    """Lowercase, trimmed, without an accelerator prefix (``[Y] ``, ``Y) ``, ``Y - ``)."""
    text = label.strip()
    text = _ACCELERATOR_PREFIX.sub("", text, count=1)
    return text.strip().lower()
