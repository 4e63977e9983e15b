"""Language server benchmark: how soon diagnostics follow the last keystroke.

Run: ``python benchmarks/bench_lsp.py [--nodes 2000] [--bursts 15]``. Starts
``attractor lsp`` as a subprocess, opens a generated pipeline of NODES stages
(benchmarks/gen_dot.py) through pygls's client and types in bursts: a few edits
30 ms apart, then a pause. For each burst it times the last edit's ``didChange``
to the ``publishDiagnostics`` of that version, and prints the median and the
worst (goal: under 300 ms for 2,000 nodes), with the debounce included.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gen_dot import generate  # noqa: E402


async def measure(nodes: int, bursts: int) -> list[float]:
    client = LanguageClient("bench", "1")
    published: dict[int | None, float] = {}
    waiting: dict[int | None, anyio.Event] = {}

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: lsp.PublishDiagnosticsParams) -> None:
        published[params.version] = time.perf_counter()
        waiting.setdefault(params.version, anyio.Event()).set()

    async def wait(version: int) -> None:
        with anyio.fail_after(60):
            await waiting.setdefault(version, anyio.Event()).wait()

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    await client.start_io(sys.executable, "-m", "attractor", "lsp", env=env)
    await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    client.initialized(lsp.InitializedParams())
    text = generate(nodes)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.dot"
        path.write_text(text, encoding="utf-8")
        uri = path.as_uri()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="dot", version=1, text=text)
            )
        )
        await wait(1)
        version, latencies = 1, []
        for burst in range(bursts):
            for key in range(4):  # four keystrokes in a prompt, 30 ms apart
                version += 1
                text = text.replace("Then report.", f"Then report{burst}{key}.", 1)
                sent = time.perf_counter()
                client.text_document_did_change(
                    lsp.DidChangeTextDocumentParams(
                        lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
                        [lsp.TextDocumentContentChangeWholeDocument(text)],
                    )
                )
                await anyio.sleep(0.03)
            await wait(version)
            latencies.append((published[version] - sent) * 1000)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--bursts", type=int, default=15)
    args = parser.parse_args()
    latencies = anyio.run(measure, args.nodes, args.bursts)
    print(f"lsp: {args.nodes} nodes, {len(latencies)} bursts of typing")
    print(
        f"  last keystroke -> diagnostics: median {statistics.median(latencies):.0f} ms, ", end=""
    )
    print(f"worst {max(latencies):.0f} ms (debounce 100 ms included; goal 300 ms)")


if __name__ == "__main__":
    main()
