"""The pipeline graph: plain dicts and adjacency lists behind typed Node and Edge views.

Attribute values are stored as the (unescaped) text the author wrote, with the
source position of every node, edge and attribute, so any diagnostic can point
at the file (kept as character offsets until read: see :mod:`attractor.dot.store`).
Typed access goes through :mod:`attractor.dot.schema`. Reachability
(:meth:`Graph.descendants`, :meth:`Graph.ancestors`) and strongly connected
components (:func:`attractor.dot.scc.strongly_connected`) are small functions
over these lists; no graph library is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, KeysView
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.dot.schema import SHAPE_TO_TYPE, SPECS, Scope, typed_value
from attractor.dot.source import Source, SourcePos
from attractor.dot.store import EdgeData, Item, NodeData, Pos

if TYPE_CHECKING:
    from attractor.dot.dialects import AliasUse
    from attractor.dot.prompt_file import PromptFile, PromptFileError

__all__ = ["Edge", "Graph", "Node", "Source", "SourcePos", "normalize_label"]


class _View:
    """Typed attribute access over an Item."""

    __slots__ = ()
    scope: Scope
    graph: Graph
    _item: Item

    @property
    def attrs(self) -> dict[str, str]:
        """Raw attribute text by key (mutable for nodes and the graph: transforms write
        there; an edge is written through :meth:`Edge.set`)."""
        return self._item.attrs

    @property
    def attr_pos(self) -> dict[str, SourcePos]:
        """Where each attribute was written (for an inherited one: in the default)."""
        return self._item.positions(self._where())

    def pos_of(self, key: str) -> SourcePos | None:
        """Where attribute ``key`` was written; cheaper than ``attr_pos`` for one key."""
        return self._item.position(key, self._where())

    def raw(self, key: str) -> str | None:
        return self._item.attrs.get(key)

    def get(self, key: str) -> Any:
        """Typed value of ``key``: parsed by the schema, default when absent/invalid."""
        return typed_value(key, self.scope, self._item.attrs.get(key))

    def has(self, key: str) -> bool:
        return key in self._item.attrs

    def set(self, key: str, value: str, pos: SourcePos | None = None) -> None:
        self._item.set(key, value, pos, self._where())

    def _where(self) -> Source | None:
        """What resolves this item's positions."""
        return self.graph._source


class Node(_View):
    """A typed view of one node."""

    __slots__ = ("graph", "id", "_item")
    scope: Scope = "node"
    _item: NodeData

    def __init__(self, graph: Graph, node_id: str) -> None:
        self.graph = graph
        self.id = node_id
        self._item = graph._nodes[node_id]

    def __repr__(self) -> str:
        return f"Node({self.id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other.graph is self.graph and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    @property
    def pos(self) -> SourcePos:
        """Where the node was declared (else first mentioned, in an edge)."""
        return self.graph._resolve(self._item.pos)

    @property
    def declared(self) -> bool:
        """False for a node only ever mentioned in edges."""
        return self._item.declared

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
        """Explicit ``type``, else the start or exit by id, else by ``shape``, else codergen."""
        explicit = self._item.attrs.get("type", "").strip()
        if explicit:
            return explicit
        return self.implied_type or "codergen"

    @property
    def implied_type(self) -> str | None:
        """The type the node has without a ``type`` attribute, None for the default.

        A node with id ``start``/``Start`` is the start, and one with id
        ``exit``/``Exit``/``end``/``End`` the exit, whatever its shape, unless
        another node is one by shape or type (see :meth:`Graph.start_candidates`).
        """
        # The raw text is the typed value of a string attribute (``shape``): no lookup.
        shape = self._item.attrs.get("shape")
        by_shape = SHAPE_TO_TYPE.get(_DEFAULT_SHAPE if shape is None else shape)
        if self.id in START_IDS or self.id in EXIT_IDS:
            kind = "start" if self.id in START_IDS else "exit"
            # The usual `start [shape=Mdiamond]` needs no look at the other nodes.
            if by_shape != kind and not any(_declared_type(n) == kind for n in self.graph):
                return kind
        return by_shape

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

    __slots__ = ("graph", "_data", "_item")
    scope: Scope = "edge"

    def __init__(self, graph: Graph, data: EdgeData) -> None:
        self.graph = graph
        self._data = data
        self._item = data.item

    def __repr__(self) -> str:
        return f"Edge({self.source!r} -> {self.target!r})"

    @property
    def source(self) -> str:
        return self._data.source

    @property
    def target(self) -> str:
        return self._data.target

    @property
    def pos(self) -> SourcePos:
        """Where the edge's source id is written in its edge statement."""
        return self.graph._resolve(self._data.pos)

    @property
    def order(self) -> int:
        """Declaration order among all edges of the graph."""
        return self._data.order

    @property
    def label(self) -> str:
        return self._item.attrs.get("label", "")

    @property
    def condition(self) -> str:
        return self._item.attrs.get("condition", "").strip()

    @property
    def weight(self) -> int | float:
        value: int | float = self.get("weight")
        return value

    def set(self, key: str, value: str, pos: SourcePos | None = None) -> None:
        """Set one attribute of this edge only.

        The edges of one chain statement (``a -> b -> c [weight=2]``) share
        their attribute dicts until one of them is set: ``attrs`` is for reading.
        """
        positions = self._item.positions(self._where())
        own = Item(dict(self._item.attrs), dict(positions))
        self._item = self._data.item = own
        own.set(key, value, pos, None)


class Graph(_View):
    """A parsed pipeline: nodes in the order first mentioned, edges in declaration order."""

    scope: Scope = "graph"

    def __init__(self, name: str, *, file: str = "<string>", source: str | Source = "") -> None:
        self.name = name
        self.file = file
        #: Where positions stored as offsets are resolved (set by the parser).
        self._source = source if isinstance(source, Source) else None
        self.source = source.text if isinstance(source, Source) else source
        self._at: Pos = SourcePos(file, 1, 1)
        self._nodes: dict[str, NodeData] = {}
        self._edges: list[EdgeData] = []
        #: A parsed graph's attribute positions are offsets until read.
        self._item = Item() if self._source is None else Item({}, None, {})
        #: Whether the nodes' ``out`` and ``into`` lists are built.
        self._indexed = False
        #: The views :meth:`nodes` made last; nodes are only ever added, so they
        #: stand while the count of nodes does.
        self._views: list[Node] = []
        #: (node id, first declaration, repeated declaration) for duplicate_node.
        self.duplicates: list[tuple[str, SourcePos, SourcePos]] = []
        #: The aliases the alias transform resolved (for the ``alias`` lint rule).
        self.aliases: list[AliasUse] = []
        #: The folder of the file the pipeline was read from (set by ``prepare``);
        #: the paths it names, such as prompt files, start there.
        self.folder: Path | None = None
        #: Where its sub-pipeline files start when not in ``folder`` (a run
        #: directory's copy: the folder of the file the run started from).
        self.include_folder: Path | None = None
        #: Prompts read from files (node id -> file), and those that could not be.
        self.prompt_files: dict[str, PromptFile] = {}
        self.prompt_errors: list[PromptFileError] = []

    def _where(self) -> Source | None:
        return self._source

    @property
    def pos(self) -> SourcePos:
        """Where the graph starts (its ``digraph``); graph-level diagnostics point there."""
        return self._resolve(self._at)

    @pos.setter
    def pos(self, pos: SourcePos) -> None:
        self._at = pos

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self._nodes)} nodes)"

    def _resolve(self, pos: Pos) -> SourcePos:
        if isinstance(pos, int):
            if self._source is None:  # cannot happen: offsets come with a source
                return SourcePos(self.file, 1, 1)
            return self._source.at(pos)
        return pos

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
            self._nodes[node_id] = NodeData(dict(attrs), pos, declared, dict(attr_pos or {}))
        else:
            if declared and data.declared:
                self.duplicates.append((node_id, self._resolve(data.pos), pos))
            if declared and not data.declared:
                data.declared = True
                data.pos = pos
            data.attrs.update(attrs)
            data.positions(self._source).update(attr_pos or {})
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
                self._nodes[end] = NodeData({}, pos, False)
        data = self._link(source, target, Item(dict(attrs), dict(attr_pos or {})), pos)
        return Edge(self, data)

    def _link(self, source: str, target: str, item: Item, pos: Pos) -> EdgeData:
        data = EdgeData(source, target, item, pos, len(self._edges))
        self._edges.append(data)
        if self._indexed:
            self._index(data)
        return data

    def _index(self, data: EdgeData) -> None:
        tail, head = self._nodes[data.source], self._nodes[data.target]
        # An empty list is replaced, never appended to: it may be NO_EDGES, or the
        # one empty list every node of an unpickled graph shares (a Ray task's copy).
        if tail.out:
            tail.out.append(data)
        else:
            tail.out = [data]
        if head.into:
            head.into.append(data)
        else:
            head.into = [data]

    def _adjacency(self) -> dict[str, NodeData]:
        """The nodes, with their ``out`` and ``into`` lists built (once, on first use)."""
        if not self._indexed:
            self._indexed = True
            for data in self._edges:
                self._index(data)
        return self._nodes

    def set_parsed(self, key: str, value: str, offset: int) -> None:
        """Set a graph attribute the parser found, its key at ``offset``."""
        self._item.set_at(key, value, offset, self._source)

    def parsed_at(self, offset: int) -> None:
        """The parser found the graph's ``digraph`` at ``offset``."""
        self._at = offset

    def add_parsed_node(
        self,
        node_id: str,
        attrs: dict[str, str],
        offset: int,
        defaults: dict[str, int] | None,
        block: int | dict[str, int],
        *,
        declared: bool = True,
    ) -> None:
        """Add a node that is not in the graph yet, as the parser found it.

        The node keeps ``attrs``; its position is the offset ``offset`` and its
        attribute positions those at the offsets ``defaults`` (shared, never
        modified) updated with those of the attribute list ``block`` (a
        :func:`~attractor.dot.lexer.block_span`, -1 for none; or key -> offset),
        worked out when first read.
        """
        if isinstance(block, dict):
            defaults, block = {**(defaults or {}), **block}, -1
        self._nodes[node_id] = NodeData(attrs, offset, declared, None, defaults, block)

    def add_parsed_edges(
        self,
        ends: list[tuple[str, int]],
        attrs: dict[str, str],
        defaults: dict[str, int] | None,
        block: int | dict[str, int],
    ) -> None:
        """Add the edges of one chain of ``(node id, offset)`` (endpoints must exist).

        The edges share one attribute dict (a big pipeline has many chains;
        :meth:`Edge.set` unshares); positions as for :meth:`add_parsed_node`.
        """
        if isinstance(block, dict):
            defaults, block = {**(defaults or {}), **block}, -1
        item = Item(attrs, None, defaults, block)
        link = self._link
        for (source, offset), (target, _) in zip(ends, ends[1:], strict=False):
            link(source, target, item, offset)

    def renamed(self, aliases: dict[str, str]) -> Graph:
        """A graph for reading: this one with the nodes ``aliases`` names left out
        and every edge endpoint renamed by it.

        It shares this graph's attribute dicts and positions instead of copying
        them (a 100,000-node graph would double in memory); write to neither.
        """
        copy = Graph(self.name, file=self.file, source=self._source or self.source)
        copy._item = self._item
        nodes = copy._nodes
        for node_id, data in self._nodes.items():
            if node_id not in aliases:
                nodes[node_id] = data.sharing()
        for edge in self._edges:
            source = aliases.get(edge.source, edge.source)
            target = aliases.get(edge.target, edge.target)
            for end in (source, target):
                if end not in nodes:
                    nodes[end] = NodeData({}, edge.pos, False)
            copy._link(source, target, edge.item, edge.pos)
        return copy

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

    def id_view(self) -> KeysView[str]:
        """The node ids as a live view (no copy; for fast membership tests)."""
        return self._nodes.keys()

    def node_ids(self) -> list[str]:
        """Every node id, in the order first mentioned."""
        return list(self._nodes)

    def nodes(self) -> list[Node]:
        """All nodes in the order they were first mentioned (a new list each time)."""
        if len(self._views) != len(self._nodes):
            self._views = [Node(self, n) for n in self._nodes]
        return self._views.copy()

    def edges(self) -> list[Edge]:
        """All edges in declaration order."""
        return [Edge(self, e) for e in self._edges]

    def outgoing(self, node_id: str) -> list[Edge]:
        """Outgoing edges of ``node_id`` in declaration order."""
        return [Edge(self, e) for e in self._adjacency()[node_id].out]

    def incoming(self, node_id: str) -> list[Edge]:
        return [Edge(self, e) for e in self._adjacency()[node_id].into]

    def successors(self, node_id: str) -> Iterator[str]:
        """Targets of the outgoing edges of ``node_id`` (repeated for parallel edges)."""
        return (e.target for e in self._adjacency()[node_id].out)

    def descendants(self, node_id: str) -> set[str]:
        """Ids reachable from ``node_id`` by one or more edges, never ``node_id`` itself."""
        return self._reach(node_id, "out", "target")

    def ancestors(self, node_id: str) -> set[str]:
        """Ids from which ``node_id`` can be reached, never ``node_id`` itself."""
        return self._reach(node_id, "into", "source")

    def _reach(self, node_id: str, side: str, end: str) -> set[str]:
        nodes = self._adjacency()
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
        """Start nodes: ``type=start`` or shape Mdiamond (with no other type), else an
        id start/Start with no ``type``."""
        return self._by_kind("start", START_IDS)

    def exit_candidates(self) -> list[Node]:
        """Exit nodes: ``type=exit`` or shape Msquare (with no other type), else an id
        exit/Exit/end/End with no ``type``."""
        return self._by_kind("exit", EXIT_IDS)

    def _by_kind(self, kind: str, ids: frozenset[str]) -> list[Node]:
        nodes = self.nodes()
        declared = [n for n in nodes if _declared_type(n) == kind]
        if declared:
            return declared
        return [n for n in nodes if n.id in ids and not n.raw("type")]

    def start_node(self) -> Node | None:
        found = self.start_candidates()
        return found[0] if len(found) == 1 else None

    def exit_ids(self) -> set[str]:
        """Every exit node's id (by type, shape or id)."""
        return {n.id for n in self.exit_candidates()}

    def is_exit(self, node: Node) -> bool:
        """One node's question; ask :meth:`exit_ids` once when checking many."""
        return node.id in self.exit_ids()


#: The shape of a node that names none (its handler type comes from it).
_DEFAULT_SHAPE: str = SPECS["shape"].default
#: Ids that make a node the start, or the exit, when no node is one by type or shape.
START_IDS = frozenset({"start", "Start"})
EXIT_IDS = frozenset({"exit", "Exit", "end", "End"})


def _declared_type(node: Node) -> str | None:
    """The node's type from its ``type`` or ``shape`` attribute alone (not its id)."""
    attrs = node.attrs  # raw text: this runs for every node when looking for the start
    return attrs.get("type", "").strip() or SHAPE_TO_TYPE.get(attrs.get("shape", "").strip())


_ACCELERATOR_PREFIX = re.compile(r"^(\[\w\]\s*|\w\)\s*|\w\s+-\s+)")


def normalize_label(label: str) -> str:
    """Lowercase, trimmed, without an accelerator prefix (``[Y] ``, ``Y) ``, ``Y - ``)."""
    text = label.strip()
    text = _ACCELERATOR_PREFIX.sub("", text, count=1)
    return text.strip().lower()
