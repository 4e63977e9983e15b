"""The HTTP application: the spec's pipeline endpoints, the web page and its files.

Endpoints (JSON unless said otherwise)::

    GET  /pipelines                          runs under the root, newest first
    POST /pipelines                          start: {"dot_source"|"path", "settings", "context"}
    POST /pipelines/prune                    delete ended runs: {"ids": [RUN_ID, ...]}
    GET  /pipelines/{id}                     status, progress, nodes, questions
    GET  /pipelines/{id}/events              Server-Sent Events (Last-Event-ID honoured)
    POST /pipelines/{id}/cancel              stop a run this server drives
    POST /pipelines/{id}/resume              continue a run: {}, {"retry_failed": true}
                                             or {"from": NODE}
    GET  /pipelines/{id}/graph               SVG with each node's state
    GET  /pipelines/{id}/questions           human gates waiting for an answer
    POST /pipelines/{id}/questions/{qid}/answer   {"answer": KEY-OR-LABEL, "comment": TEXT}
    GET  /pipelines/{id}/checkpoint          the last checkpoint
    GET  /pipelines/{id}/context             the context of the last checkpoint
    GET  /pipelines/{id}/nodes/{node}        one node: state, attempts, stage files
                                             (?attempt=NODE/vV-aA: that attempt's)
    GET  /pipelines/{id}/nodes/{node}/files/{name}   a stage file whole (stdout.txt...)
    GET  /pipelines/{id}/nodes/{node}/files/acp_terminals/{name}   an ACP terminal's output
    GET  /pipelines/{id}/timeline            every attempt, gate wait and branch
    GET  /pipelines/{id}/nodes/{node}/diff   what the stage changed in the run's workspace
    GET  /                                   the web page (static files, no CDN)
    GET|POST|DELETE /mcp                     attractor's MCP tools, streamable HTTP
                                             (the mcp extra; see server/mcp_server.py)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from attractor.server.auth import TokenMiddleware
from attractor.server.handlers import Handlers
from attractor.server.headers import SecurityHeaders
from attractor.server.runs import RunManager

STATIC = Path(__file__).parent / "static"
#: The Host headers a token-less server answers, besides its own address (it
#: listens on loopback only).
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]


class McpEndpoint:
    """``/mcp``: the MCP server's streamable HTTP endpoint while the app runs.

    Without the ``mcp`` extra it answers 501 saying what to install.
    """

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    @contextlib.asynccontextmanager
    async def open(self, manager: RunManager) -> AsyncIterator[None]:
        try:
            from attractor.server.mcp_server import http_endpoint
        except ImportError:
            yield
            return
        async with http_endpoint(manager) as app:
            self.app = app
            try:
                yield
            finally:
                self.app = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is not None:
            await self.app(scope, receive, send)
            return
        message = "attractor's MCP endpoint needs the mcp extra: pip install 'attractor[mcp]'"
        await JSONResponse({"error": message}, status_code=501)(scope, receive, send)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such path, a method the path does not take) as
    the API's other errors are: ``{"error": "..."}``."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        message = f"no endpoint {request.url.path}; docs/server.md lists the endpoints"
    elif exc.status_code == 405:
        allow = {k.lower(): v for k, v in (exc.headers or {}).items()}.get("allow", "")
        allowed = ", ".join(sorted(m.strip() for m in allow.split(",") if m.strip()))
        message = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
    else:
        message = str(exc.detail)
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


def create_app(
    root: Path,
    token: str | None = None,
    run_flags: dict[str, str] | None = None,
    host: str = "127.0.0.1",
    page_url: str | None = None,
) -> Starlette:
    """The application serving the runs under ``root``; ``token`` guards every request.

    Without a token (``--no-token``, loopback only) a request must name the
    bound ``host`` or a loopback name in its Host header.
    """
    manager = RunManager(root, run_flags, page_url)
    h = Handlers(manager)

    mcp = McpEndpoint()

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group, mcp.open(manager):
            manager.attach(group)
            yield
            group.cancel_scope.cancel()  # stop every run; each is saved as interrupted

    routes = [
        Route("/", h.index),
        Route("/pipelines", h.list_runs, methods=["GET"]),
        Route("/pipelines", h.start, methods=["POST"]),
        Route("/pipelines/prune", h.prune, methods=["POST"]),
        Route("/pipelines/{id}", h.status),
        Route("/pipelines/{id}/events", h.events),
        Route("/pipelines/{id}/cancel", h.cancel, methods=["POST"]),
        Route("/pipelines/{id}/resume", h.resume, methods=["POST"]),
        Route("/pipelines/{id}/graph", h.graph),
        Route("/pipelines/{id}/questions", h.questions),
        Route("/pipelines/{id}/questions/{qid}/answer", h.answer, methods=["POST"]),
        Route("/pipelines/{id}/checkpoint", h.checkpoint),
        Route("/pipelines/{id}/context", h.context),
        Route("/pipelines/{id}/nodes/{node}", h.node),
        Route("/pipelines/{id}/nodes/{node}/files/{name}", h.node_file),
        Route("/pipelines/{id}/nodes/{node}/files/acp_terminals/{name}", h.terminal_file),
        Route("/pipelines/{id}/timeline", h.run_timeline),
        Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
        Route("/pipelines/{id}/nodes/{node}/diff", h.node_diff),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders)]
    if token:
        middleware.append(Middleware(TokenMiddleware, token=token))
    else:  # loopback only: a page from elsewhere cannot reach it by renaming a host
        allowed = [*LOOPBACK_NAMES, host.strip("[]"), f"[{host.strip('[]')}]"]
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=allowed))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    app.state.manager = manager
    return app
