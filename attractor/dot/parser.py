"""Recursive-descent parser for attractor's DOT subset, building a :class:`Graph`.

Scoping follows Graphviz: ``node [...]`` and ``edge [...]`` defaults apply to
statements after them in the same subgraph (and its nested subgraphs); a node
first mentioned in an edge is created with the node defaults in force there but
stays ``declared=False``. Re-declaring a node merges only its explicit
attributes, so later defaults never overwrite earlier explicit values.

A subgraph's ``label`` (from ``label = "..."`` or ``graph [label=...]`` inside
it) derives a class (``"Loop A"`` -> ``loop-a``) appended to the ``class`` of
every node declared or first created in that subgraph, wherever in the
subgraph the label is written.
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from attractor.dot.graph import Graph, SourcePos
from attractor.dot.lexer import (
    ARROW,
    ATTR,
    ATTRS,
    EOF,
    STRING,
    WORD,
    Token,
    describe,
    scan,
    unescape,
)
from attractor.errors import InputFileError, PipelineError, PipelineSyntaxError
from attractor.fileio import TEXT_LIMIT, read_bounded

_NODE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CLASS_DROP = re.compile(r"[^a-z0-9-]")
_KEYWORDS = frozenset({"graph", "node", "edge", "subgraph", "digraph", "strict"})

#: An attribute list as parsed: key -> value, and key -> position of the key.
Attrs = tuple[dict[str, str], dict[str, SourcePos]]


def _no_attrs() -> Attrs:
    return {}, {}


def _update(attrs: Attrs, more: Attrs) -> None:
    attrs[0].update(more[0])
    attrs[1].update(more[1])


def derive_class(label: str) -> str:
    """Class name derived from a subgraph label: ``"Loop A"`` -> ``loop-a``."""
    return _CLASS_DROP.sub("", label.strip().lower().replace(" ", "-"))


#: Deepest subgraph nesting accepted.
MAX_SUBGRAPH_DEPTH = 100


@dataclass
class _Scope:
    """Defaults and membership of the graph body or one subgraph."""

    node_defaults: Attrs = field(default_factory=_no_attrs)
    edge_defaults: Attrs = field(default_factory=_no_attrs)
    members: list[str] = field(default_factory=list)
    label: str | None = None


class _Parser:
    """Walks the scanner's parallel lists; ``i`` is the index of the next token."""

    def __init__(self, text: str, file: str) -> None:
        self.file = file
        tokens = scan(text, file=file, blocks=True)
        self.text = text
        self.blocks = tokens.blocks
        self.kinds = tokens.kinds
        self.values = tokens.values
        self.offsets = tokens.offsets
        self.lines = tokens.lines
        self.last = len(self.kinds) - 1
        self.i = 0
        self.graph = Graph("", file=file, source=text)
        #: node id -> its attribute dict in the graph (shared, not a copy).
        self.node_attrs: dict[str, dict[str, str]] = {}
        self.depth = 0

    # -- token helpers -------------------------------------------------------

    def token(self, i: int) -> Token:
        line, column = self.lines.locate(self.offsets[i])
        return Token(self.kinds[i], self.values[i], line, column)

    def advance(self) -> int:
        """Consume the next token and return its index (EOF is never consumed)."""
        i = self.i
        if i < self.last:
            self.i = i + 1
        return i

    def pos(self, i: int) -> SourcePos:
        line, column = self.lines.locate(self.offsets[i])
        return SourcePos(self.file, line, column)

    def fail(self, i: int, message: str) -> PipelineSyntaxError:
        line, column = self.lines.locate(self.offsets[i])
        return PipelineSyntaxError(message, file=self.file, line=line, column=column)

    def found(self, i: int) -> str:
        return describe(self.token(i))

    def expect(self, kind: str, what: str) -> int:
        i = self.advance()
        if self.kinds[i] != kind:
            raise self.fail(i, f"expected {what}, found {self.found(i)}")
        return i

    def keyword(self, i: int) -> str | None:
        if self.kinds[i] == WORD:
            low = self.values[i].lower()
            if low in _KEYWORDS:
                return low
        return None

    # -- grammar -------------------------------------------------------------

    def parse(self) -> Graph:
        self.header()
        self.body(_Scope())
        i = self.i
        if self.kinds[i] != EOF:
            if self.keyword(i) in ("digraph", "graph", "strict"):
                raise self.fail(
                    i, "a file holds exactly one digraph; move this one to its own file"
                )
            raise self.fail(
                i, f"expected end of file after the closing '}}', found {self.found(i)}"
            )
        return self.graph

    def header(self) -> None:
        i = self.advance()
        word = self.keyword(i)
        if word == "strict":
            raise self.fail(i, "'strict' graphs are not supported; remove 'strict'")
        if word == "graph":
            raise self.fail(i, "undirected 'graph' is not supported; use 'digraph'")
        if word != "digraph":
            raise self.fail(i, f"expected 'digraph', found {self.found(i)}")
        self.graph.pos = self.pos(i)  # graph-level diagnostics point at 'digraph'
        name = self.i
        if self.kinds[name] in (WORD, STRING) and self.values[name] != "{":
            if self.kinds[name] == WORD and not _NODE_ID.fullmatch(self.values[name]):
                raise self.fail(
                    name, f"expected a graph name like my_pipeline, found {self.found(name)}"
                )
            self.graph.name = self.values[name]
            self.advance()
        self.expect("{", "'{' to open the graph body")

    def body(self, scope: _Scope) -> None:
        """Statements up to and including the closing brace."""
        kinds = self.kinds
        while True:
            kind = kinds[self.i]
            if kind == "}":
                self.advance()
                return
            if kind == ";":
                self.advance()
            elif kind == EOF:
                raise self.fail(self.i, "expected '}' to close the graph body, found end of file")
            else:
                self.statement(scope)

    def statement(self, scope: _Scope) -> None:
        i = self.i
        kind = self.kinds[i]
        word = self.keyword(i)
        if word is not None:
            self.keyword_statement(word, scope)
        elif kind == "{":
            self.advance()
            self.subgraph(scope)
        elif kind == WORD:
            self.id_statement(scope)
        elif kind == STRING:
            raise self.fail(
                i, "node ids are bare identifiers like review_code; put display text in label"
            )
        else:
            raise self.fail(
                i, f"expected a statement (node, edge, attribute), found {self.found(i)}"
            )

    def keyword_statement(self, word: str, scope: _Scope) -> None:
        i = self.advance()
        if word == "subgraph":
            if self.kinds[self.i] in (WORD, STRING):
                self.advance()
            self.expect("{", "'{' to open the subgraph")
            self.subgraph(scope)
        elif word == "graph":
            self.graph_attrs(self.attr_block(), scope)
        elif word == "node":
            _update(scope.node_defaults, self.attr_block())
        elif word == "edge":
            _update(scope.edge_defaults, self.attr_block())
        else:
            raise self.fail(i, "a file holds exactly one digraph; move this one to its own file")

    def subgraph(self, parent: _Scope) -> None:
        # Nesting is recursive descent; a limit keeps absurd files from
        # exhausting Python's stack and gives the author a position instead.
        self.depth += 1
        if self.depth > MAX_SUBGRAPH_DEPTH:
            raise self.fail(
                self.i - 1,
                f"subgraphs nest more than {MAX_SUBGRAPH_DEPTH} deep; flatten the structure",
            )
        nodes, edges = parent.node_defaults, parent.edge_defaults
        scope = _Scope((dict(nodes[0]), dict(nodes[1])), (dict(edges[0]), dict(edges[1])))
        scope.label = ""  # a subgraph, not the top-level body
        self.body(scope)
        cls = derive_class(scope.label or "")
        if cls:
            for node_id in scope.members:
                self.add_class(node_id, cls)
        parent.members.extend(scope.members)
        self.depth -= 1

    def add_class(self, node_id: str, cls: str) -> None:
        attrs = self.node_attrs[node_id]
        text = attrs.get("class", "")
        if not text:
            attrs["class"] = cls  # one string shared by the whole subgraph
            return
        current = [c.strip() for c in text.split(",") if c.strip()]
        if cls not in current:
            attrs["class"] = ",".join([*current, cls])

    def graph_attrs(self, attrs: Attrs, scope: _Scope) -> None:
        values, positions = attrs
        if scope.label is not None:  # inside a subgraph: only its label matters
            if "label" in values:
                scope.label = values["label"]
            return
        for key, value in values.items():
            self.graph.set(key, value, positions[key])

    def id_statement(self, scope: _Scope) -> None:
        first = self.advance()
        nxt = self.kinds[self.i]
        if nxt == "=":
            self.advance()
            key = self.check_key(first)
            value = self.value()
            self.graph_attrs(({key: value}, {key: self.pos(first)}), scope)
            return
        node_id = self.check_node_id(first)
        if nxt == ARROW:
            self.edge_statement(first, node_id, scope)
        else:
            attrs = self.attr_block() if nxt == "[" or nxt == ATTRS else _no_attrs()
            self.node_statement(node_id, self.pos(first), attrs, scope)

    def node_statement(
        self, node_id: str, pos: SourcePos, attrs: Attrs, scope: _Scope, declared: bool = True
    ) -> None:
        """Declare ``node_id`` (or create it from an edge: ``declared=False``).

        ``attrs`` must be fresh dicts: a new node keeps them.
        """
        values, positions = attrs
        if node_id in self.node_attrs:
            self.graph.add_node(node_id, values, pos, positions)
            return
        default_values, default_positions = scope.node_defaults
        if default_values:
            values = {**default_values, **values}
            positions = {**default_positions, **positions}
        scope.members.append(node_id)
        self.node_attrs[node_id] = values
        self.graph.add_new_node(node_id, values, pos, positions, declared=declared)

    def edge_statement(self, first: int, first_id: str, scope: _Scope) -> None:
        ends: list[tuple[str, SourcePos]] = [(first_id, self.pos(first))]
        kinds = self.kinds
        while kinds[self.i] == ARROW:
            self.advance()
            i = self.advance()
            if kinds[i] != WORD or self.keyword(i) is not None:
                raise self.fail(i, f"expected a node id after '->', found {self.found(i)}")
            ends.append((self.check_node_id(i), self.pos(i)))
        values, positions = scope.edge_defaults
        if kinds[self.i] == "[" or kinds[self.i] == ATTRS:
            own_values, own_positions = self.attr_block()
            values = {**values, **own_values}
            positions = {**positions, **own_positions}
        for node_id, pos in ends:
            if node_id not in self.node_attrs:
                self.node_statement(node_id, pos, _no_attrs(), scope, declared=False)
        pairs = zip(ends, ends[1:], strict=False)
        self.graph.add_edges(((s, t, pos) for (s, pos), (t, _) in pairs), values, positions)

    def attr_block(self) -> Attrs:
        """``[ key=value, ... ]`` (empty allowed, trailing comma tolerated)."""
        if self.kinds[self.i] == ATTRS:
            return self.scanned_block(self.advance())
        self.expect("[", "'[' to start an attribute list")
        kinds = self.kinds
        values: dict[str, str] = {}
        positions: dict[str, SourcePos] = {}
        while kinds[self.i] != "]":
            key_i = self.advance()
            if kinds[key_i] != WORD:
                raise self.fail(
                    key_i, f"expected an attribute name or ']', found {self.found(key_i)}"
                )
            key = self.check_key(key_i)
            self.expect("=", f"'=' after attribute name '{key}'")
            values[key] = self.value()
            positions[key] = self.pos(key_i)
            sep = kinds[self.i]
            if sep == ",":
                self.advance()
            elif sep != "]":
                raise self.fail(
                    self.i,
                    "expected ',' between attributes or ']' to close the list, "
                    f"found {self.found(self.i)}",
                )
        self.advance()
        return values, positions

    def scanned_block(self, i: int) -> Attrs:
        """The items of an ``ATTRS`` token (well formed: the scanner checked)."""
        starts = self.lines.starts
        file = self.file
        new = tuple.__new__  # SourcePos(...) without its Python-level __new__
        values: dict[str, str] = {}
        positions: dict[str, SourcePos] = {}
        for match in ATTR.finditer(self.text, self.offsets[i] + 1, self.blocks[i]):
            key, word, quoted = match.groups()
            values[key] = unescape(quoted) if word is None else word
            at = match.start()
            line = bisect_right(starts, at)
            positions[key] = new(SourcePos, (file, line, at - starts[line - 1] + 1))
        return values, positions

    def value(self) -> str:
        i = self.advance()
        if self.kinds[i] in (STRING, WORD):
            return self.values[i]
        raise self.fail(i, f"expected a value (quoted string, number, word), found {self.found(i)}")

    def check_node_id(self, i: int) -> str:
        value = self.values[i]
        if not _NODE_ID.fullmatch(value):
            raise self.fail(
                i,
                f"invalid node id {self.found(i)}: "
                "use letters, digits and _ (not starting with a digit)",
            )
        return value

    def check_key(self, i: int) -> str:
        value = self.values[i]
        if not _KEY.fullmatch(value):
            raise self.fail(
                i, f"invalid attribute name {self.found(i)}: use letters, digits, _ and dots"
            )
        return value


def parse_dot(text: str, *, file: str = "<string>") -> Graph:
    """Parse DOT ``text`` into a :class:`Graph` (no transforms, no validation).

    Raises:
        PipelineSyntaxError: with file, line, column and what was expected.
    """
    # Parsing allocates many long-lived objects; pausing the cyclic garbage
    # collector meanwhile avoids repeated full collections on large files.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _Parser(text, file).parse()
    finally:
        if was_enabled:
            gc.enable()


def read_source(path: str | Path) -> str:
    """The text of a pipeline file; an unreadable file raises PipelineError (exit 2).

    A FIFO, a device or a file over :data:`~attractor.fileio.TEXT_LIMIT` is
    unreadable too (see :func:`~attractor.fileio.read_bounded`).
    """
    try:
        return read_bounded(path, TEXT_LIMIT, "pipeline file")
    except InputFileError as error:
        raise PipelineError(str(error)) from None


def load(path: str | Path) -> Graph:
    """Read and parse the pipeline file at ``path``."""
    return parse_dot(read_source(path), file=str(path))
