"""The language server: pygls over stdio, linting in a worker thread.

Edits are linted after a short pause in typing (the debounce), in one worker
thread, so a big pipeline never blocks the protocol loop; requests (hover,
completion, ...) use the newest analysis, linting the current text themselves
when the worker has not caught up with it.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from attractor.dot.graph import Graph
from attractor.dot.parser import read_source
from attractor.lsp import complete, fixes, fmt, hover, navigate
from attractor.lsp.analysis import Analysis, analyze, default_docs_url
from attractor.lsp.text import cursor_at, offset_of, word_at
from attractor.version import __version__

#: How long typing must pause before the document is linted.
DEBOUNCE_SECONDS = 0.1


class AttractorServer(LanguageServer):
    """The server's state: the newest analysis of each open document."""

    def __init__(self, debounce: float = DEBOUNCE_SECONDS) -> None:
        super().__init__("attractor", __version__)
        self.debounce = debounce
        self.docs_url = default_docs_url()
        self._analyses: dict[str, Analysis] = {}
        self._graphs: dict[str, Graph] = {}  # the last graph that parsed, per document
        self._due: dict[str, float] = {}
        self._wake = threading.Condition()
        self._stopping = False
        self._worker = threading.Thread(target=self._work, name="attractor-lint", daemon=True)

    # -- linting ----------------------------------------------------------------

    def schedule(self, uri: str, delay: float | None = None) -> None:
        """Lint ``uri`` once typing has paused for ``delay`` seconds."""
        with self._wake:
            self._due[uri] = time.monotonic() + (self.debounce if delay is None else delay)
            self._wake.notify()
        if not self._worker.is_alive() and not self._stopping:
            self._worker.start()

    def stop_worker(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()

    def _next_due(self) -> str | None:
        """Wait for the next document whose pause is over (None: stopping)."""
        with self._wake:
            while not self._stopping:
                now = time.monotonic()
                ready = [uri for uri, at in self._due.items() if at <= now]
                if ready:
                    del self._due[ready[0]]
                    return ready[0]
                wait = min(self._due.values(), default=now + 3600) - now
                self._wake.wait(wait)
        return None

    def _work(self) -> None:
        while (uri := self._next_due()) is not None:
            if uri not in self.workspace.text_documents:
                continue  # closed meanwhile
            try:
                self.publish(uri, self.current(uri))
            except Exception as error:  # noqa: BLE001 - a bug must not end the server
                self.window_log_message(
                    lsp.LogMessageParams(lsp.MessageType.Error, f"lint failed: {error!r}")
                )

    def publish(self, uri: str, analysis: Analysis) -> None:
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri, analysis.diagnostics, analysis.version)
        )

    def _read(self, path: Path) -> str:
        """A file's text: the editor's buffer when it is open, else the disk."""
        document = self.workspace.text_documents.get(path.as_uri())
        return document.source if document is not None else read_source(path)

    def current(self, uri: str) -> Analysis:
        """The analysis of the document's current text (read from disk if not open)."""
        document = self.workspace.get_text_document(uri)
        text, version = document.source, document.version
        found = self._analyses.get(uri)
        if found is not None and found.version == version and found.text == text:
            return found
        file = to_fs_path(uri) or uri
        found = analyze(text, file, read=self._read, version=version, docs=self.docs_url)
        self._analyses[uri] = found
        if found.graph is not None:
            self._graphs[uri] = found.graph
        return found

    def graph(self, uri: str) -> Graph | None:
        """The newest graph of ``uri`` that parsed (completion works mid-edit)."""
        analysis = self.current(uri)
        return analysis.graph or self._graphs.get(uri)

    def forget(self, uri: str) -> None:
        with self._wake:
            self._due.pop(uri, None)
        self._analyses.pop(uri, None)
        self._graphs.pop(uri, None)


def _offset(server: AttractorServer, uri: str, position: lsp.Position) -> tuple[str, int]:
    text = server.workspace.get_text_document(uri).source
    return text, offset_of(text, position.line, position.character)


def build(debounce: float = DEBOUNCE_SECONDS) -> AttractorServer:
    """The server with every feature registered."""
    server = AttractorServer(debounce)
    _register_documents(server)
    _register_edits(server)
    _register_navigation(server)
    return server


def _register_documents(server: AttractorServer) -> None:
    """Initialization and the document lifecycle, which drive linting."""

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: AttractorServer, params: lsp.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("rulesDocs"), str):
            ls.docs_url = options["rulesDocs"]

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AttractorServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, delay=0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AttractorServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AttractorServer, params: lsp.DidSaveTextDocumentParams) -> None:
        for uri in list(ls.workspace.text_documents):  # a parent sees its saved child
            ls.schedule(uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AttractorServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(params.text_document.uri, [])
        )

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: AttractorServer, params: Any) -> None:
        ls.stop_worker()


def _register_edits(server: AttractorServer) -> None:
    """Quick fixes, completion and formatting."""

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    def code_action(ls: AttractorServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        text = ls.workspace.get_text_document(uri).source
        return fixes.code_actions(uri, text, list(params.context.diagnostics))

    @server.feature(
        lsp.TEXT_DOCUMENT_COMPLETION,
        lsp.CompletionOptions(trigger_characters=["[", ",", "=", ">", '"', " "]),
    )
    def completion(ls: AttractorServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        uri = params.text_document.uri
        text, offset = _offset(ls, uri, params.position)
        items = complete.completions(cursor_at(text, offset), ls.graph(uri))
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: AttractorServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        text = ls.workspace.get_text_document(params.text_document.uri).source
        formatted = fmt.format_text(text)
        if formatted == text:
            return []
        lines = text.split("\n")
        end = lsp.Position(len(lines) - 1, len(lines[-1]))
        return [lsp.TextEdit(lsp.Range(lsp.Position(0, 0), end), formatted)]


def _register_navigation(server: AttractorServer) -> None:
    """Hover, definition, references and symbols."""

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: AttractorServer, params: lsp.HoverParams) -> lsp.Hover | None:
        return _hover(ls, params.text_document.uri, params.position)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: AttractorServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        uri = params.text_document.uri
        text, offset = _offset(ls, uri, params.position)
        graph = ls.graph(uri)
        return None if graph is None else navigate.definition(graph, text, uri, offset)

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: AttractorServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
        uri = params.text_document.uri
        text, offset = _offset(ls, uri, params.position)
        graph = ls.graph(uri)
        return [] if graph is None else navigate.references(graph, text, uri, offset)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(
        ls: AttractorServer, params: lsp.DocumentSymbolParams
    ) -> list[lsp.DocumentSymbol]:
        uri = params.text_document.uri
        graph = ls.graph(uri)
        text = ls.workspace.get_text_document(uri).source
        return [] if graph is None else navigate.symbols(graph, text)


def _hover(ls: AttractorServer, uri: str, position: lsp.Position) -> lsp.Hover | None:
    analysis = ls.current(uri)
    text = analysis.text
    offset = offset_of(text, position.line, position.character)
    parts: list[str] = []
    for found in analysis.diagnostics:
        if _contains(found.range, position) and isinstance(found.code, str):
            doc = hover.rule_doc(found.code)
            if doc and doc not in parts:
                parts.append(doc)
    word = word_at(text, offset)
    where = None
    if word is not None:
        start, end, name = word
        where = lsp.Range(
            lsp.Position(position.line, position.character - (offset - start)),
            lsp.Position(position.line, position.character + (end - offset)),
        )
        graph = ls.graph(uri)
        if text[end:].lstrip(' \t"').startswith("="):
            doc = hover.attribute_doc(name)
            if doc:
                parts.append(doc)
        elif graph is not None and name in graph:
            parts.append(hover.node_doc(graph, graph.node(name)))
    return hover.markdown("\n\n---\n\n".join(parts), where) if parts else None


def _contains(where: lsp.Range, position: lsp.Position) -> bool:
    start, end = where.start, where.end
    after_start = (position.line, position.character) >= (start.line, start.character)
    return after_start and (position.line, position.character) <= (end.line, end.character)


class _LockedStdout:
    """stdout whose writes are whole messages: the worker thread publishes too."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, data: bytes) -> int:
        with self._lock:
            written = self._stream.write(data)
            self._stream.flush()
            return written

    def flush(self) -> None:
        with self._lock:
            self._stream.flush()

    def close(self) -> None:
        self._stream.close()


def serve_stdio(debounce: float = DEBOUNCE_SECONDS) -> None:
    """Run the server on stdin/stdout until the client says exit."""
    server = build(debounce)
    try:
        server.start_io(sys.stdin.buffer, _LockedStdout(sys.stdout.buffer))  # type: ignore[arg-type]
    finally:
        server.stop_worker()
