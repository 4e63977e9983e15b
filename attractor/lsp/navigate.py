"""Go to definition and references of node ids, files a pipeline names, and the
document's symbols (nodes, grouped by subgraph)."""

from __future__ import annotations

import re
from pathlib import Path

from lsprotocol import types as lsp

from attractor.dot.graph import Graph
from attractor.lsp.analysis import CHILD_KEY, child_path
from attractor.lsp.text import (
    id_occurrences,
    offset_of,
    range_of,
    target_occurrences,
    word_at,
)

#: Attributes whose value names a file, relative to the pipeline's folder.
FILE_KEYS = (CHILD_KEY, "human.show")
_QUOTED_ITEM = re.compile(r'(?P<key>[\w.]+)\s*=\s*"(?P<value>(?:[^"\\]|\\.)*)"')
_SUBGRAPH = re.compile(r"\bsubgraph\s+(?P<name>\w+)?\s*\{")


def file_at(graph: Graph, text: str, offset: int) -> Path | None:
    """The file named by the quoted value under ``offset`` (child pipeline, prompt file)."""
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    for match in _QUOTED_ITEM.finditer(line):
        if not match.start("value") <= offset - line_start <= match.end("value"):
            continue
        key, value = match.group("key"), match.group("value").strip()
        if key in FILE_KEYS:
            return child_path(graph, value)
        if value.startswith("@"):  # prompt="@file": the text is read from the file
            return child_path(graph, value[1:])
    return None


def node_at(graph: Graph, text: str, offset: int) -> tuple[str, lsp.Range] | None:
    """The node id under ``offset`` and its range."""
    found = word_at(text, offset)
    if found is None or found[2] not in graph:
        return None
    start, end, name = found
    return name, range_of(text, start, end)


def definition(graph: Graph, text: str, uri: str, offset: int) -> lsp.Location | None:
    path = file_at(graph, text, offset)
    if path is not None:
        if not path.is_file():
            return None
        return lsp.Location(path.as_uri(), lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)))
    found = node_at(graph, text, offset)
    if found is None:
        return None
    pos = graph.node(found[0]).pos
    start = lsp.Position(pos.line - 1, pos.column - 1)
    end = lsp.Position(pos.line - 1, pos.column - 1 + len(found[0]))
    return lsp.Location(uri, lsp.Range(start, end))


def references(graph: Graph, text: str, uri: str, offset: int) -> list[lsp.Location]:
    """Every place the node id under ``offset`` is written (edges, retry targets)."""
    found = node_at(graph, text, offset)
    if found is None:
        return []
    name = found[0]
    starts = sorted({*id_occurrences(text, name), *target_occurrences(text, name)})
    return [lsp.Location(uri, range_of(text, at, at + len(name))) for at in starts]


def _subgraphs(text: str) -> list[tuple[str, int, int, int]]:
    """(name, start, name offset, end) of each subgraph block."""
    blocks = []
    for match in _SUBGRAPH.finditer(text):
        depth, end = 0, len(text)
        for token in re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|[{}]').finditer(text, match.end() - 1):
            if token.group() == "{":
                depth += 1
            elif token.group() == "}":
                depth -= 1
                if depth == 0:
                    end = token.end()
                    break
        name = match.group("name") or "subgraph"
        blocks.append(
            (
                name,
                match.start(),
                match.start("name") if match.group("name") else match.start(),
                end,
            )
        )
    return blocks


def symbols(graph: Graph, text: str) -> list[lsp.DocumentSymbol]:
    """Declared nodes, inside the subgraph that declares them."""
    groups = [
        (
            start,
            end,
            lsp.DocumentSymbol(
                name=name,
                kind=lsp.SymbolKind.Namespace,
                range=range_of(text, start, end),
                selection_range=range_of(text, at, at + len(name)),
                children=[],
            ),
        )
        for name, start, at, end in _subgraphs(text)
    ]
    top: list[lsp.DocumentSymbol] = [g for _, _, g in groups]
    for node in graph.nodes():
        if not node.declared:
            continue
        pos = node.pos
        where = lsp.Range(
            lsp.Position(pos.line - 1, pos.column - 1),
            lsp.Position(pos.line - 1, pos.column - 1 + len(node.id)),
        )
        symbol = lsp.DocumentSymbol(
            name=node.id,
            kind=lsp.SymbolKind.Function,
            range=where,
            selection_range=where,
            detail=node.handler_type,
        )
        if groups:
            offset = offset_of(text, pos.line - 1, pos.column - 1)
            inner = [g for start, end, g in groups if start <= offset < end]
            if inner:
                inner[-1].children.append(symbol)  # type: ignore[union-attr]
                continue
        top.append(symbol)
    return top
