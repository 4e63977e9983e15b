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

import re
from dataclasses import dataclass, field
from pathlib import Path

from attractor.errors import PipelineError, PipelineSyntaxError
from attractor.pipeline.graph import Graph, SourcePos
from attractor.pipeline.lexer import ARROW, EOF, STRING, WORD, Token, describe, tokenize

_NODE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CLASS_DROP = re.compile(r"[^a-z0-9-]")
_KEYWORDS = frozenset({"graph", "node", "edge", "subgraph", "digraph", "strict"})

#: An attribute list as parsed: key -> (value, position of the key).
Attrs = dict[str, tuple[str, SourcePos]]


def derive_class(label: str) -> str:
    """Class name derived from a subgraph label: ``"Loop A"`` -> ``loop-a``."""
    return _CLASS_DROP.sub("", label.strip().lower().replace(" ", "-"))


@dataclass
class _Scope:
    """Defaults and membership of the graph body or one subgraph."""

    node_defaults: Attrs = field(default_factory=dict)
    edge_defaults: Attrs = field(default_factory=dict)
    members: list[str] = field(default_factory=list)
    label: str | None = None


class _Parser:
    def __init__(self, text: str, file: str) -> None:
        self.file = file
        self.text = text
        self.tokens = tokenize(text, file=file)
        self.i = 0
        self.graph = Graph("", file=file, source=text)

    # -- token helpers -------------------------------------------------------

    def peek(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> Token:
        token = self.tokens[self.i]
        if token.kind != EOF:
            self.i += 1
        return token

    def pos(self, token: Token) -> SourcePos:
        return SourcePos(self.file, token.line, token.column)

    def fail(self, token: Token, message: str) -> PipelineSyntaxError:
        return PipelineSyntaxError(message, file=self.file, line=token.line, column=token.column)

    def expect(self, kind: str, what: str) -> Token:
        token = self.advance()
        if token.kind != kind:
            raise self.fail(token, f"expected {what}, found {describe(token)}")
        return token

    def keyword(self, token: Token) -> str | None:
        if token.kind == WORD:
            low = token.value.lower()
            if low in _KEYWORDS:
                return low
        return None

    # -- grammar -------------------------------------------------------------

    def parse(self) -> Graph:
        self.header()
        self.body(_Scope())
        token = self.peek()
        if token.kind != EOF:
            if self.keyword(token) in ("digraph", "graph", "strict"):
                raise self.fail(
                    token, "a file holds exactly one digraph; move this one to its own file"
                )
            raise self.fail(
                token, f"expected end of file after the closing '}}', found {describe(token)}"
            )
        return self.graph

    def header(self) -> None:
        token = self.advance()
        word = self.keyword(token)
        if word == "strict":
            raise self.fail(token, "'strict' graphs are not supported; remove 'strict'")
        if word == "graph":
            raise self.fail(token, "undirected 'graph' is not supported; use 'digraph'")
        if word != "digraph":
            raise self.fail(token, f"expected 'digraph', found {describe(token)}")
        self.graph.pos = self.pos(token)  # graph-level diagnostics point at 'digraph'
        name = self.peek()
        if name.kind in (WORD, STRING):
            if name.kind == WORD and not _NODE_ID.fullmatch(name.value):
                raise self.fail(
                    name, f"expected a graph name like my_pipeline, found {describe(name)}"
                )
            self.graph.name = name.value
            self.advance()
        self.expect("{", "'{' to open the graph body")

    def body(self, scope: _Scope) -> None:
        """Statements up to and including the closing brace."""
        while True:
            token = self.peek()
            if token.kind == "}":
                self.advance()
                return
            if token.kind == ";":
                self.advance()
                continue
            if token.kind == EOF:
                raise self.fail(token, "expected '}' to close the graph body, found end of file")
            self.statement(scope)

    def statement(self, scope: _Scope) -> None:
        token = self.peek()
        word = self.keyword(token)
        if word is not None:
            self.keyword_statement(word, token, scope)
        elif token.kind == "{":
            self.advance()
            self.subgraph(scope)
        elif token.kind == WORD:
            self.id_statement(scope)
        elif token.kind == STRING:
            raise self.fail(
                token, "node ids are bare identifiers like review_code; put display text in label"
            )
        else:
            raise self.fail(
                token, f"expected a statement (node, edge, attribute), found {describe(token)}"
            )

    def keyword_statement(self, word: str, token: Token, scope: _Scope) -> None:
        self.advance()
        if word == "subgraph":
            if self.peek().kind in (WORD, STRING):
                self.advance()
            self.expect("{", "'{' to open the subgraph")
            self.subgraph(scope)
        elif word == "graph":
            self.graph_attrs(self.attr_block(), scope)
        elif word == "node":
            scope.node_defaults.update(self.attr_block())
        elif word == "edge":
            scope.edge_defaults.update(self.attr_block())
        else:
            raise self.fail(
                token, "a file holds exactly one digraph; move this one to its own file"
            )

    def subgraph(self, parent: _Scope) -> None:
        scope = _Scope(dict(parent.node_defaults), dict(parent.edge_defaults))
        scope.label = ""  # a subgraph, not the top-level body
        self.body(scope)
        cls = derive_class(scope.label or "")
        if cls:
            for node_id in scope.members:
                self.add_class(node_id, cls)
        parent.members.extend(scope.members)

    def add_class(self, node_id: str, cls: str) -> None:
        node = self.graph.node(node_id)
        current = [c.strip() for c in node.attrs.get("class", "").split(",") if c.strip()]
        if cls not in current:
            node.attrs["class"] = ",".join([*current, cls])

    def graph_attrs(self, attrs: Attrs, scope: _Scope) -> None:
        if scope.label is not None:  # inside a subgraph: only its label matters
            if "label" in attrs:
                scope.label = attrs["label"][0]
            return
        for key, (value, pos) in attrs.items():
            self.graph.set(key, value, pos)

    def id_statement(self, scope: _Scope) -> None:
        first = self.advance()
        nxt = self.peek()
        if nxt.kind == "=":
            self.advance()
            key = self.check_key(first)
            value = self.value()
            self.graph_attrs({key: (value, self.pos(first))}, scope)
            return
        node_id = self.check_node_id(first)
        if nxt.kind == ARROW:
            self.edge_statement(first, node_id, scope)
        else:
            attrs = self.attr_block() if nxt.kind == "[" else {}
            self.node_statement(node_id, self.pos(first), attrs, scope)

    def node_statement(self, node_id: str, pos: SourcePos, attrs: Attrs, scope: _Scope) -> None:
        if not self.graph.has_node(node_id):
            attrs = {**scope.node_defaults, **attrs}
            scope.members.append(node_id)
        values = {k: v for k, (v, _) in attrs.items()}
        positions = {k: p for k, (_, p) in attrs.items()}
        self.graph.add_node(node_id, values, pos, positions)

    def edge_statement(self, first: Token, first_id: str, scope: _Scope) -> None:
        ends: list[tuple[str, SourcePos]] = [(first_id, self.pos(first))]
        while self.peek().kind == ARROW:
            self.advance()
            token = self.advance()
            if token.kind != WORD or self.keyword(token) is not None:
                raise self.fail(token, f"expected a node id after '->', found {describe(token)}")
            ends.append((self.check_node_id(token), self.pos(token)))
        attrs = {**scope.edge_defaults, **(self.attr_block() if self.peek().kind == "[" else {})}
        values = {k: v for k, (v, _) in attrs.items()}
        positions = {k: p for k, (_, p) in attrs.items()}
        for node_id, pos in ends:
            if not self.graph.has_node(node_id):
                self.node_statement(node_id, pos, {}, scope)
                self.graph.nx.nodes[node_id]["declared"] = False
        for (source, pos), (target, _) in zip(ends, ends[1:], strict=False):
            self.graph.add_edge(source, target, values, pos, positions)

    def attr_block(self) -> Attrs:
        """``[ key=value, ... ]`` (empty allowed, trailing comma tolerated)."""
        self.expect("[", "'[' to start an attribute list")
        attrs: Attrs = {}
        while self.peek().kind != "]":
            key_token = self.advance()
            if key_token.kind != WORD:
                raise self.fail(
                    key_token, f"expected an attribute name or ']', found {describe(key_token)}"
                )
            key = self.check_key(key_token)
            self.expect("=", f"'=' after attribute name '{key}'")
            attrs[key] = (self.value(), self.pos(key_token))
            sep = self.peek()
            if sep.kind == ",":
                self.advance()
            elif sep.kind != "]":
                raise self.fail(
                    sep,
                    f"expected ',' between attributes or ']' to close the list, "
                    f"found {describe(sep)}",
                )
        self.advance()
        return attrs

    def value(self) -> str:
        token = self.advance()
        if token.kind in (STRING, WORD):
            return token.value
        raise self.fail(
            token, f"expected a value (quoted string, number, word), found {describe(token)}"
        )

    def check_node_id(self, token: Token) -> str:
        if not _NODE_ID.fullmatch(token.value):
            raise self.fail(
                token,
                f"invalid node id {describe(token)}: "
                "use letters, digits and _ (not starting with a digit)",
            )
        return token.value

    def check_key(self, token: Token) -> str:
        if not _KEY.fullmatch(token.value):
            raise self.fail(
                token, f"invalid attribute name {describe(token)}: use letters, digits, _ and dots"
            )
        return token.value


def parse_dot(text: str, *, file: str = "<string>") -> Graph:
    """Parse DOT ``text`` into a :class:`Graph` (no transforms, no validation).

    Raises:
        PipelineSyntaxError: with file, line, column and what was expected.
    """
    return _Parser(text, file).parse()


def read_source(path: str | Path) -> str:
    """The text of a pipeline file; an unreadable file raises PipelineError (exit 2)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PipelineError(f"{path}: cannot read: not UTF-8 text") from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise PipelineError(f"{path}: cannot read: {reason}") from None


def load(path: str | Path) -> Graph:
    """Read and parse the pipeline file at ``path``."""
    return parse_dot(read_source(path), file=str(path))
