"""A real ``attractor serve`` process on 127.0.0.1 and an SSE reader for the tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from attractor.server.auth import TOKEN_FILE

#: A tool step that waits for a file, then a human gate: a run that stops twice.
GATE_PIPELINE = """digraph gate {
    start  [shape=Mdiamond]
    done   [shape=Msquare]
    work   [shape=parallelogram, tool_command="while [ ! -f go ]; do sleep 0.05; done; echo built"]
    review [shape=hexagon, label="Ship it?"]
    start -> work -> review
    review -> done [label="[A] Approve"]
    review -> work [label="[R] Redo"]
}
"""

#: The tool step breaks its own run directory: the checkpoint's place becomes a
#: folder, so the engine cannot write the run's state any more (outside the
#: sandbox, which would refuse it).
_WRECK = (
    "for d in .attractor/runs/*/; do rm -f $d/checkpoint.json; mkdir -p $d/checkpoint.json/x; done"
)
BREAKS_ITS_RUN = f"""digraph breaks {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    wreck [shape=parallelogram, sandbox=none, tool_command="{_WRECK}"]
    start -> wreck -> done
}}
"""

#: Fails until the file ``fixed`` exists.
FLAKY = """digraph flaky {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    check [shape=parallelogram, tool_command="test -f fixed"]
    start -> check -> done
}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ATTRACTOR_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(extra or {})
    return env


@dataclass
class Server:
    """A running server: its base URL, root and process."""

    url: str
    root: Path
    process: subprocess.Popen[str]
    token: str | None = None

    def client(self, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)

    def stop(self) -> str:
        """Stop the server as Ctrl-C does; its stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err or ""


def start_server(
    root: Path,
    extra_args: Sequence[str] = (),
    token: str | None = None,
    host: str = "127.0.0.1",
    python: Sequence[str] = ("-m", "attractor"),
    cwd: Path | None = None,
) -> Server:
    """``attractor serve`` in a subprocess (started in ``cwd``, default the root),
    returned once it answers.

    Unless ``token`` is given or ``--no-token`` is passed, the client uses the
    token the server made, read from ``ROOT/.attractor/serve.token``.
    """
    port = free_port()
    args = [sys.executable, *python, "serve", "--root", str(root), "--port", str(port)]
    args += ["--host", host, *extra_args]
    process = subprocess.Popen(
        args, cwd=cwd or root, env=_clean_env(), stderr=subprocess.PIPE, text=True
    )
    address = host if host.startswith("127.") else "127.0.0.1"
    server = Server(f"http://{address}:{port}", root, process, token)
    deadline = time.monotonic() + 30
    with server.client() as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"server exited: {server.stop()}")
            try:
                client.get("/pipelines")
            except httpx.TransportError:
                time.sleep(0.05)  # the port is not open yet
                continue
            if token is None and "--no-token" not in extra_args:
                server.token = (root / TOKEN_FILE).read_text().strip()
            return server
    server.stop()
    raise AssertionError("server did not answer within 30s")


@dataclass
class SseEvent:
    id: int
    type: str
    data: dict[str, Any]


def sse_events(response: httpx.Response) -> Iterator[SseEvent]:
    """The messages of an open SSE response, as they arrive."""
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if line == "":
            if "data" in fields:
                yield SseEvent(
                    int(fields.get("id", "0")), fields.get("event", ""), json.loads(fields["data"])
                )
            fields = {}
        elif not line.startswith(":") and ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.removeprefix(" ")


def read_until(events: Iterator[SseEvent], wanted: str, name: str | None = None) -> list[SseEvent]:
    """Events up to and including the first of type ``wanted`` (for node ``name``)."""
    seen = []
    for event in events:
        seen.append(event)
        if event.type == wanted and name in (None, event.data.get("name")):
            return seen
    raise AssertionError(f"stream ended before {wanted}: {[e.type for e in seen]}")


#: A price for the scripted model: every request has a known cost.
PRICES = "[prices.scripted]\ninput = 100.0\noutput = 1000.0\ncache_read = 10.0\n"

#: A pipeline of LLM nodes, two of them in parallel branches, for what runs spend.
SPENDS = """digraph spends {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    plan  [prompt="Plan the work", max_turns=10]
    fan   [shape=component]
    left  [prompt="Left half"]
    right [prompt="Right half"]
    join  [shape=tripleoctagon]
    start -> plan -> fan
    fan -> left
    fan -> right
    left -> join
    right -> join
    join -> done
}
"""


def scripted_answer(text: str, usage: dict[str, int], tool: str | None = None) -> dict[str, Any]:
    """One response of the scripted model: ``text``, ``usage``, and a shell call of ``tool``."""
    calls = [{"name": "shell", "arguments": {"command": tool}}] if tool else []
    return {"text": text, "tool_calls": calls, "usage": usage}


#: The scripted model's answers to SPENDS: every request with known tokens.
SPENDING_SCRIPT = {
    "responses": [
        scripted_answer(
            "", {"input_tokens": 1000, "output_tokens": 100, "cache_read_tokens": 600}, "true"
        ),
        scripted_answer("planned", {"input_tokens": 1500, "output_tokens": 200}),
        scripted_answer("half done", {"input_tokens": 300, "output_tokens": 30}),
    ],
    "then": "repeat_last",
}


def write_spending_run(root: Path) -> None:
    """``spends.dot``, its scripted model ``model.json`` and the prices, in ``root``."""
    (root / "spends.dot").write_text(SPENDS)
    (root / "model.json").write_text(json.dumps(SPENDING_SCRIPT))
    (root / "attractor.toml").write_text(PRICES)
