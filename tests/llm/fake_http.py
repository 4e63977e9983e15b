"""A real HTTP server on 127.0.0.1 that replays scripted answers and records requests.

It runs the standard library's threading HTTP server in a background thread, so
the adapters under test talk to it over real sockets exactly as to a provider.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    ``events`` makes it a server-sent-event stream: (event name or None, data).
    ``hold`` keeps the request open, unanswered, until the server stops.
    ``raw`` is sent as the body byte for byte, with ``content_type``, instead of
    ``body`` as JSON (a web page, or anything else a wrong URL may answer).
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    events: tuple[tuple[str | None, Any], ...] | None = None
    hold: bool = False
    raw: bytes | None = None
    content_type: str = "application/json"
    #: Answered only when as many requests as the barrier's parties wait on it.
    barrier: threading.Barrier | None = None


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    #: The client's port: one per connection.
    peer: int = 0


class FakeServer:
    """Scripted HTTP server; use :func:`serve` to run it."""

    def __init__(self, replies: Iterable[Reply] = (), *, keep_alive: bool = False) -> None:
        """``keep_alive`` answers in HTTP/1.1, keeping each connection open for the next
        request (by default each answer closes its connection, as HTTP/1.0 does)."""
        self.replies: deque[Reply] = deque(replies)
        self.received: list[Received] = []
        self.arrived = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()
        handler = _handler_for(self)
        if keep_alive:
            handler.protocol_version = "HTTP/1.1"
        self._httpd = _Server(("127.0.0.1", 0), handler)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.received]

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self, received: Received) -> Reply:
        with self._lock:
            self.received.append(received)
            if self.replies:
                return self.replies.popleft()
        return Reply(500, {"error": {"message": "no scripted reply left"}})

    @contextmanager
    def running(self) -> Iterator[FakeServer]:
        thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        thread.start()
        try:
            yield self
        finally:
            self.release.set()
            self._httpd.shutdown()
            self._httpd.server_close()
            thread.join()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients may connect at once


def _handler_for(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw) if raw else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            peer = self.client_address[1]
            reply = server.next_reply(Received("POST", self.path, headers, body, peer))
            # The client may give up first (timeout or cancellation): expected.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer(reply)

        def _answer(self, reply: Reply) -> None:
            if reply.barrier is not None:
                reply.barrier.wait(timeout=30)
            if reply.hold:
                server.arrived.set()
                server.release.wait()
                return
            if reply.events is not None:
                self._stream(reply)
                return
            payload = reply.raw
            if payload is None:
                payload = b"" if reply.body is None else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for event, data in reply.events or ():
                text = data if isinstance(data, str) else json.dumps(data)
                prefix = f"event: {event}\n" if event else ""
                self.wfile.write(f"{prefix}data: {text}\n\n".encode())
                self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


def refused_url() -> str:
    """A loopback URL where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
