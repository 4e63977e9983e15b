"""Real webhook receivers on 127.0.0.1: one that records requests, one that never answers."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Hook:
    """Records every POST; answers each with the next status of ``statuses`` (then 200)."""

    def __init__(self, statuses: tuple[int, ...] = ()) -> None:
        self.requests: list[Request] = []
        self._statuses = list(statuses)
        self._lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with hook._lock:
                    hook.requests.append(Request(self.path, dict(self.headers.items()), body))
                    status = hook._statuses.pop(0) if hook._statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook/T0KEN"

    def events(self) -> list[str]:
        return [r.json()["event"] for r in self.requests]

    @contextmanager
    def running(self) -> Iterator[Hook]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join()


@contextmanager
def silent_hook() -> Iterator[str]:
    """A URL whose server takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
