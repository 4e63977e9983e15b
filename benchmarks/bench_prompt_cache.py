"""What prompt caching saves on a long Anthropic session, with the real adapter and agent loop.

Run: ``python benchmarks/bench_prompt_cache.py [TURNS]``. A local server speaks the
Messages API and bills each request the way Anthropic's prefix cache would: a
prefix that ends at a breakpoint (``cache_control``) is written to the cache; a
later request whose prefix up to one of its breakpoints, or up to 20 blocks
before it, matches a written entry reads those tokens from the cache. Tokens are
estimated at four characters each, and entries shorter than 1,024 tokens are not
cached. The session reads a 4 kB file every turn, so its conversation grows.
Prints the tokens read from and written to the cache and the cost at the
built-in claude-haiku-4-5 price, with the breakpoints and without.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

from attractor.agent.session import AgentSession, SessionConfig
from attractor.agent.tools import default_registry
from attractor.agent.transcript import Transcript
from attractor.llm.anthropic_model import AnthropicModel
from attractor.llm.pricing import PricedModel, PriceTable
from attractor.llm.types import Usage

MODEL = "claude-haiku-4-5"
MIN_CACHED = 1024
LOOKBACK = 20


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [*body.get("tools", []), *body.get("system", [])]
    for turn in body["messages"]:
        blocks += [{"role": turn["role"], **block} for block in turn["content"]]
    return blocks


class PrefixCache:
    """Anthropic-like billing of one request against the entries written so far."""

    def __init__(self) -> None:
        self.entries: set[str] = set()

    def bill(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = _blocks(body)
        plain = [json.dumps({k: v for k, v in b.items() if k != "cache_control"}) for b in blocks]
        sizes = [len(text) // 4 for text in plain]
        keys = [
            hashlib.sha256("".join(plain[: i + 1]).encode()).hexdigest() for i in range(len(plain))
        ]
        marks = [i for i, b in enumerate(blocks) if "cache_control" in b]
        hit = -1
        for mark in marks:
            for end in range(mark, max(-1, mark - LOOKBACK), -1):
                if keys[end] in self.entries:
                    hit = max(hit, end)
                    break
        read = sum(sizes[: hit + 1])
        written = 0
        last = max(marks, default=-1)
        if last > hit and sum(sizes[: last + 1]) >= MIN_CACHED:
            written = sum(sizes[hit + 1 : last + 1])
            self.entries.update(keys[m] for m in marks)
        total = sum(sizes)
        return {
            "input_tokens": total - read - written,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "output_tokens": 60,
        }


def _serve(turns: int) -> tuple[ThreadingHTTPServer, PrefixCache]:
    cache = PrefixCache()
    count = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            count["n"] += 1
            n = count["n"]
            content: list[dict[str, Any]] = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{n}",
                    "name": "read_file",
                    "input": {"path": f"f{n % 5}.txt"},
                }
            ]
            stop = "tool_use"
            if n >= turns or not body.get("tools"):
                content, stop = [{"type": "text", "text": "done"}], "end_turn"
            reply = {
                "id": f"msg_{n}", "type": "message", "role": "assistant", "model": MODEL,
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": cache.bill(body),
            }  # fmt: skip
            payload = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, cache


async def _session(turns: int, *, prompt_cache: bool) -> Usage:
    server, _ = _serve(turns)
    host, port = server.server_address[:2]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for i in range(5):
            (work / f"f{i}.txt").write_text(f"line {i}: " + "lorem ipsum dolor sit amet " * 150)
        adapter = AnthropicModel(
            MODEL, api_key="bench", base_url=f"http://{host!s}:{port}", prompt_cache=prompt_cache
        )
        model = PricedModel(adapter, PriceTable())
        session = AgentSession(
            model,
            SessionConfig(node_id="n", prompt="read the files", workdir=work, max_turns=turns + 5),
            tools=default_registry(),
            transcript=Transcript(work / "stage"),
            emit=lambda event: None,
        )
        try:
            result = await session.run()
        finally:
            await model.aclose()
            server.shutdown()
    return result.usage


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    cached = anyio.run(lambda: _session(turns, prompt_cache=True))
    plain = anyio.run(lambda: _session(turns, prompt_cache=False))
    print(f"{turns}-turn session, {cached.input_tokens:,} input tokens in all")
    for label, usage in (("with breakpoints", cached), ("without", plain)):
        share = usage.cache_read_tokens / max(1, usage.input_tokens)
        print(
            f"  {label:17} read {usage.cache_read_tokens:>9,} ({share:.0%})  "
            f"written {usage.cache_write_tokens:>8,}  cost ${usage.cost or 0:.4f}"
        )
    if plain.cost and cached.cost is not None:
        print(f"  saving: {1 - cached.cost / plain.cost:.0%} of the input and output cost")


if __name__ == "__main__":
    main()
