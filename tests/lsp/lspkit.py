"""A real LSP session: ``attractor lsp`` started as a subprocess, driven over
stdio by pygls's own language client."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[2]


class Session:
    """A client connected to the server, with the diagnostics it was sent."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.diagnostics: dict[str, list[lsp.Diagnostic]] = {}
        self.published: list[tuple[str, int | None]] = []
        self.versions: dict[str, int] = {}

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.resolve().as_uri()
        text = path.read_text(encoding="utf-8") if text is None else text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="dot", version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> int:
        """Replace the whole text; returns the new version."""
        version = self.versions[uri] = self.versions[uri] + 1
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [lsp.TextDocumentContentChangeWholeDocument(text)],
            )
        )
        return version

    async def diagnostics_for(
        self,
        uri: str,
        version: int | None = None,
        until: Callable[[list[lsp.Diagnostic]], bool] = lambda found: True,
    ) -> list[lsp.Diagnostic]:
        """The diagnostics published for ``uri`` (at ``version``), waiting for them."""
        with anyio.fail_after(30):  # generous: a loaded machine is slow, never this slow
            while True:
                if (uri, version or self.versions.get(uri)) in self.published:
                    found = self.diagnostics[uri]
                    if until(found):
                        return found
                await anyio.sleep(0.01)


@asynccontextmanager
async def session(**options: object) -> AsyncIterator[Session]:
    """Start ``attractor lsp``, initialize it, and shut it down at the end."""
    client = LanguageClient("attractor-tests", "1")
    state = Session(client)

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: lsp.PublishDiagnosticsParams) -> None:
        state.diagnostics[params.uri] = list(params.diagnostics)
        state.published.append((params.uri, params.version))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    await client.start_io(sys.executable, "-m", "attractor", "lsp", env=env)
    try:
        await client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                root_uri=ROOT.as_uri(),
                initialization_options=options or None,
            )
        )
        client.initialized(lsp.InitializedParams())
        yield state
    finally:
        with anyio.move_on_after(10, shield=True):
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()
