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
from pathlib import Path
from sys import intern

from attractor.dot.graph import Graph, Source
from attractor.dot.lexer import (
    ARROW,
    ATTRS,
    CHAIN,
    CHAIN_IDS,
    EOF,
    NODE,
    PAIRS,
    STRING,
    WORD,
    Token,
    describe,
    scan,
    unescape,
)
from attractor.errors import InputFileError, PipelineError, PipelineSyntaxError
from attractor.fileio.reads import TEXT_LIMIT, read_bounded

_NODE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
#: A key with hyphens (``max-session-turns``): read when quoted, as Graphviz does.
_HYPHENATED_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*")
_CLASS_DROP = re.compile(r"[^a-z0-9-]")
_LOW = (1 << 32) - 1  # see span_bounds
_KEYWORDS = frozenset({"graph", "node", "edge", "subgraph", "digraph", "strict"})
#: Tokens after a key that cannot continue an attribute list but start or end a
#: statement: the list before the key was not closed.
_NOT_IN_A_LIST = frozenset({"[", "{", "}", ARROW, EOF, ATTRS})

#: An attribute list as parsed: key -> value, and key -> offset of the key (the
#: graph works out positions from offsets when they are read).
Attrs = tuple[dict[str, str], dict[str, int]]

#: The attribute list of a node or edge statement: key -> value, and either
#: key -> offset or the :func:`~attractor.dot.lexer.block_span` of a well-formed
#: list whose items are found again when a position is read (-1: no list).
Own = tuple[dict[str, str], dict[str, int] | int]

_NO_ATTRS: Attrs = ({}, {})  # never modified: defaults are replaced, not updated


def _merged(attrs: Attrs, more: Attrs) -> Attrs:
    return {**attrs[0], **more[0]}, {**attrs[1], **more[1]}


def derive_class(label: str) -> str:
    """Class name derived from a subgraph label: ``"Loop A"`` -> ``loop-a``."""
    return _CLASS_DROP.sub("", label.strip().lower().replace(" ", "-"))


#: Deepest subgraph nesting accepted.
MAX_SUBGRAPH_DEPTH = 100


class _Scope:
    """Defaults and membership of the graph body or one subgraph.

    The defaults are shared with nested scopes and with the nodes and edges
    created under them, so they are replaced by a ``node [...]`` or ``edge [...]``
    statement, never updated in place. (A plain class: a dataclass costs a cold
    ``attractor lint`` a millisecond to create.)
    """

    __slots__ = ("node_defaults", "edge_defaults", "members", "label")

    def __init__(
        self,
        node_defaults: Attrs = _NO_ATTRS,
        edge_defaults: Attrs = _NO_ATTRS,
        label: str | None = None,
    ) -> None:
        self.node_defaults = node_defaults
        self.edge_defaults = edge_defaults
        #: The attribute dicts of the nodes declared or first created here.
        self.members: list[dict[str, str]] = []
        #: None for the graph body; a subgraph's label ("" until one is written).
        self.label = label


class _Parser:
    """Walks the scanner's parallel lists; ``i`` is the index of the next token.

    With ``fast``, the scanner's ``NODE``, ``ATTRS`` and ``CHAIN`` tokens are
    used. They stand for tokens the plain scanner would give, so the parser
    takes the same decisions on them, with one exception: an error found at a
    ``NODE`` or ``CHAIN`` token (one that is not where a statement may start)
    would name it, not the token the plain parser stops at. :func:`parse_dot`
    then parses again without ``fast`` for the exact message.
    """

    def __init__(self, text: str, file: str, *, fast: bool) -> None:
        self.file = file
        tokens = scan(text, file=file, fast=fast)
        self.text = text
        self.ends = tokens.ends
        self.kinds = tokens.kinds
        self.values = tokens.values
        self.offsets = tokens.offsets
        self.lines = tokens.lines
        self.last = len(self.kinds) - 1
        self.i = 0
        self.source = Source(file, text, tokens.lines)
        self.graph = Graph("", file=file, source=self.source)
        self.known = self.graph.id_view()
        self.depth = 0
        #: Whether the error raised was found at a ``NODE`` or ``CHAIN`` token.
        self.failed_at_fused = False

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

    def fail(self, i: int, message: str) -> PipelineSyntaxError:
        self.failed_at_fused = self.kinds[i] in (NODE, CHAIN)
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
        self.graph.parsed_at(self.offsets[i])  # graph-level diagnostics point at 'digraph'
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
            if kind == NODE:
                self.node_token(scope)
            elif kind == "}":
                self.advance()
                return
            elif kind == ";":
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
        elif kind == CHAIN:
            self.advance()
            ids = CHAIN_IDS.finditer(self.text, self.offsets[i], self.ends[i])
            self.edge_statement([(m.group(), m.start()) for m in ids], scope)
        elif kind == STRING and self.kinds[i + 1] == "=":
            self.advance()
            self.advance()
            key = self.check_key(i)  # a quoted key: "goal" = "..."
            self.graph_attrs(({key: self.value()}, {key: self.offsets[i]}), scope)
        elif kind == STRING:
            raise self.fail(
                i, "node ids are bare identifiers like review_code; put display text in label"
            )
        else:
            raise self.fail(
                i, f"expected a statement (node, edge, attribute), found {self.found(i)}"
            )

    def node_token(self, scope: _Scope) -> None:
        """A ``NODE`` token: a node statement of a valid id and a well-formed list."""
        i = self.advance()
        span = self.ends[i]
        self.node_statement(self.values[i], self.offsets[i], (self.block_values(span), span), scope)

    def keyword_statement(self, word: str, scope: _Scope) -> None:
        i = self.advance()
        if word == "subgraph":
            if self.kinds[self.i] in (WORD, STRING):
                self.advance()
            self.expect("{", "'{' to open the subgraph")
            self.subgraph(scope)
        elif word == "graph":
            self.graph_attrs(self.offsets_of(self.attr_block()), scope)
        elif word == "node":
            scope.node_defaults = _merged(scope.node_defaults, self.offsets_of(self.attr_block()))
        elif word == "edge":
            scope.edge_defaults = _merged(scope.edge_defaults, self.offsets_of(self.attr_block()))
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
        # A subgraph, not the top-level body: label "".
        scope = _Scope(parent.node_defaults, parent.edge_defaults, label="")
        self.body(scope)
        cls = derive_class(scope.label or "")
        if cls:
            for attrs in scope.members:
                _add_class(attrs, cls)
        parent.members.extend(scope.members)
        self.depth -= 1

    def graph_attrs(self, attrs: Attrs, scope: _Scope) -> None:
        values, positions = attrs
        if scope.label is not None:  # inside a subgraph: only its label matters
            if "label" in values:
                scope.label = values["label"]
            return
        for key, value in values.items():
            self.graph.set_parsed(key, value, positions[key])

    def id_statement(self, scope: _Scope) -> None:
        first = self.advance()
        nxt = self.kinds[self.i]
        if nxt == "=":
            self.advance()
            key = self.check_key(first)
            value = self.value()
            self.graph_attrs(({key: value}, {key: self.offsets[first]}), scope)
            return
        node_id = self.check_node_id(first)
        if nxt == ARROW:
            self.edge_statement([(node_id, self.offsets[first])], scope)
        else:
            own = self.attr_block() if nxt == "[" or nxt == ATTRS else ({}, -1)
            self.node_statement(node_id, self.offsets[first], own, scope)

    def node_statement(
        self, node_id: str, offset: int, own: Own, scope: _Scope, declared: bool = True
    ) -> None:
        """Declare ``node_id`` (or create it from an edge: ``declared=False``).

        ``own`` must hold a fresh dict: a new node keeps it.
        """
        values, where = own
        if node_id in self.known:
            at = self.source.at
            positions = {key: at(written) for key, written in self.offsets_of(own)[1].items()}
            self.graph.add_node(node_id, values, at(offset), positions)
            return
        default_values, default_positions = scope.node_defaults
        if default_values:
            values = {**default_values, **values}
        scope.members.append(values)
        self.graph.add_parsed_node(
            node_id, values, offset, default_positions or None, where, declared=declared
        )

    def edge_statement(self, ends: list[tuple[str, int]], scope: _Scope) -> None:
        """The rest of an edge statement whose first ends (id, offset) are read."""
        kinds = self.kinds
        while kinds[self.i] == ARROW:
            self.advance()
            i = self.advance()
            if kinds[i] != WORD or self.keyword(i) is not None:
                raise self.fail(i, f"expected a node id after '->', found {self.found(i)}")
            ends.append((self.check_node_id(i), self.offsets[i]))
        values, positions = scope.edge_defaults
        where: dict[str, int] | int = -1
        if kinds[self.i] == "[" or kinds[self.i] == ATTRS:
            own_values, where = self.attr_block()
            values = {**values, **own_values}
        else:
            values = dict(values)
        known = self.known
        for node_id, offset in ends:
            if node_id not in known:
                self.node_statement(node_id, offset, ({}, -1), scope, declared=False)
        self.graph.add_parsed_edges(ends, values, positions or None, where)

    def attr_block(self) -> Own:
        """``[ key=value, ... ]``: as in Graphviz, each item may be followed by one
        ``,`` or ``;``, or by nothing (the next item, or the closing ``]``); a key
        may be quoted. An empty list is allowed."""
        if self.kinds[self.i] == ATTRS:
            span = self.ends[self.advance()]
            return self.block_values(span), span
        self.expect("[", "'[' to start an attribute list")
        kinds = self.kinds
        values: dict[str, str] = {}
        positions: dict[str, int] = {}
        while kinds[self.i] != "]":
            key_i = self.advance()
            if kinds[key_i] != WORD and kinds[key_i] != STRING:
                raise self.fail(
                    key_i, f"expected an attribute name or ']', found {self.found(key_i)}"
                )
            key = self.check_key(key_i)
            if kinds[self.i] in _NOT_IN_A_LIST:
                # `a [x=1` then `b [...]` or `b -> c` on the next line: the list
                # was never closed, and the key is really a statement's first id.
                raise self.fail(
                    key_i,
                    f"attribute list not closed before {self.found(key_i)}; "
                    "write ']' after its last attribute",
                )
            self.expect("=", f"'=' after attribute name '{key}'")
            values[key] = self.value()
            positions[key] = self.offsets[key_i]
            sep = kinds[self.i]
            if sep == "," or sep == ";":
                self.advance()
            elif sep != "]" and sep != WORD and sep != STRING:
                raise self.fail(
                    self.i,
                    "expected another attribute or ']' to close the list, "
                    f"found {self.found(self.i)}",
                )
        self.advance()
        return values, positions

    def block_values(self, span: int) -> dict[str, str]:
        """The values of the items of the well-formed list ``span``."""
        text = self.text
        start, end = span >> 32, span & _LOW  # span_bounds(span), inlined
        start += 1  # after the "["
        pairs = PAIRS.findall(text, start, end)
        # One string per distinct key, not one per item: a 100,000-node file
        # writes ~300,000 keys (17 MB as separate strings).
        if text.find("\\", start, end) < 0:
            return {intern(key): value for key, value in pairs}
        values = {}
        for key, value in pairs:  # a bare value has no backslash
            values[intern(key)] = unescape(value) if "\\" in value else value
        return values

    def offsets_of(self, own: Own) -> Attrs:
        """``own`` with the offsets of its keys (found now in a well-formed list)."""
        values, where = own
        if isinstance(where, int):
            return values, self.source.block_offsets(where) if where >= 0 else {}
        return values, where

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
        if _KEY.fullmatch(value):
            return value
        if _HYPHENATED_KEY.fullmatch(value):
            if self.kinds[i] == STRING:
                return value  # Graphviz takes any quoted key; one engine writes prompt-ref
            raise self.fail(
                i,
                f"invalid attribute name {self.found(i)}: a name with '-' must be quoted "
                f'(Graphviz refuses it unquoted too); quote it: "{value}"=...',
            )
        raise self.fail(
            i, f"invalid attribute name {self.found(i)}: use letters, digits, _ and dots"
        )


def _add_class(attrs: dict[str, str], cls: str) -> None:
    text = attrs.get("class", "")
    if not text:
        attrs["class"] = cls  # one string shared by the whole subgraph
        return
    current = [c.strip() for c in text.split(",") if c.strip()]
    if cls not in current:
        attrs["class"] = ",".join([*current, cls])


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
        return _parse(text, file)
    finally:
        if was_enabled:
            gc.enable()


def _parse(text: str, file: str) -> Graph:
    # The scanner's errors are those of both modes. A list's span packs two offsets
    # in one int (lexer.block_span), for texts under 4 Gi characters.
    parser = _Parser(text, file, fast=len(text) < 1 << 32)
    try:
        return parser.parse()
    except PipelineSyntaxError:
        if not parser.failed_at_fused:
            raise
    return _Parser(text, file, fast=False).parse()


def read_source(path: str | Path) -> str:
    """The text of a pipeline file; an unreadable file raises PipelineError (exit 2).

    A FIFO, a device or a file over :data:`~attractor.fileio.reads.TEXT_LIMIT` is
    unreadable too (see :func:`~attractor.fileio.reads.read_bounded`).
    """
    try:
        return read_bounded(path, TEXT_LIMIT, "pipeline file")
    except InputFileError as error:
        raise PipelineError(str(error)) from None


def load(path: str | Path) -> Graph:
    """Read and parse the pipeline file at ``path``."""
    return parse_dot(read_source(path), file=str(path))
