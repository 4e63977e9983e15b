"""The storage behind the graph's views: attributes with their positions, node and
edge records.

A big pipeline has a position for every node, edge and attribute and most are
never read, so a parsed item keeps character offsets and works positions out
(through the graph's :class:`~attractor.dot.source.Source`) when first read.
"""

from __future__ import annotations

from attractor.dot.source import Source, SourcePos


class Item:
    """Attributes shared by nodes, edges and the graph itself.

    Positions may wait: a parsed item keeps the offsets of the defaults in force
    (shared, never modified: the parser replaces, not updates, a scope's
    defaults) and the span of its own attribute list (a
    :func:`~attractor.dot.lexer.block_span`, -1 for none), and works out the
    positions the first time somebody reads or writes them.
    """

    __slots__ = ("attrs", "_pos", "_defaults", "_block")

    def __init__(
        self,
        attrs: dict[str, str] | None = None,
        attr_pos: dict[str, SourcePos] | None = None,
        defaults: dict[str, int] | None = None,
        block: int = -1,
    ) -> None:
        self.attrs: dict[str, str] = {} if attrs is None else attrs
        lazy = attr_pos is None and (defaults is not None or block >= 0)
        self._pos: dict[str, SourcePos] | None = None if lazy else attr_pos or {}
        self._defaults = defaults
        self._block = block

    def positions(self, source: Source | None) -> dict[str, SourcePos]:
        pos = self._pos
        if pos is None:
            pos = {}
            if source is not None:
                pos = {key: source.at(offset) for key, offset in (self._defaults or {}).items()}
                if self._block >= 0:
                    pos.update(source.block_positions(self._block))
            self._pos, self._defaults = pos, None
        return pos

    def position(self, key: str, source: Source | None) -> SourcePos | None:
        """Where ``key`` was written, without working out the others' positions."""
        pos = self._pos
        if pos is not None:
            return pos.get(key)
        if key not in self.attrs or source is None:  # (parsed: values and positions alike)
            return None
        if self._block >= 0:
            found = source.key_position(self._block, key)
            if found is not None:
                return found
        offset = self._defaults.get(key) if self._defaults else None
        return None if offset is None else source.at(offset)

    def set(self, key: str, value: str, pos: SourcePos | None, source: Source | None) -> None:
        self.attrs[key] = value
        if pos is not None:
            self.positions(source)[key] = pos

    def set_at(self, key: str, value: str, offset: int, source: Source | None) -> None:
        """Set ``key``, written at ``offset``, on an item whose offsets are its own
        (the graph's: never a shared default)."""
        if self._pos is None and self._defaults is not None:
            self.attrs[key] = value
            self._defaults[key] = offset
        else:
            self.set(key, value, source.at(offset) if source else None, source)


#: A position as stored: resolved, or the offset of a parsed token.
Pos = SourcePos | int


class NodeData(Item):
    __slots__ = ("pos", "declared", "out", "into")

    def __init__(
        self,
        attrs: dict[str, str],
        pos: Pos,
        declared: bool,
        attr_pos: dict[str, SourcePos] | None = None,
        defaults: dict[str, int] | None = None,
        block: int = -1,
    ) -> None:
        # Item.__init__ inlined: the parser builds one of these per node.
        self.attrs = attrs
        lazy = attr_pos is None and (defaults is not None or block >= 0)
        self._pos = None if lazy else attr_pos or {}
        self._defaults = defaults
        self._block = block
        self.pos = pos
        self.declared = declared
        #: Outgoing and incoming edges in declaration order, once the graph's
        #: adjacency is built (see :meth:`Graph._adjacency`).
        self.out: list[EdgeData] = NO_EDGES
        self.into: list[EdgeData] = NO_EDGES

    def sharing(self) -> NodeData:
        """The same node for another graph: attributes and positions shared, no edges."""
        return NodeData(self.attrs, self.pos, self.declared, self._pos, self._defaults, self._block)


#: The adjacency of a node without edges (shared; replaced, never appended to).
NO_EDGES: list[EdgeData] = []


class EdgeData:
    __slots__ = ("source", "target", "item", "pos", "order")

    def __init__(self, source: str, target: str, item: Item, pos: Pos, order: int) -> None:
        self.source = source
        self.target = target
        self.item = item
        self.pos = pos
        self.order = order
