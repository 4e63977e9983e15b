"""The HTTP application: the spec's pipeline endpoints, the web page and its files.

Endpoints (JSON unless said otherwise)::

    GET  /pipelines                          runs under the root, newest first
    POST /pipelines                          start: {"dot_source"|"path", "settings", "context"}
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
    GET  /pipelines/{id}/nodes/{node}        one node: state and its stage files
    GET  /pipelines/{id}/nodes/{node}/diff   what the stage changed in the run's workspace
    GET  /                                   the web page (static files, no CDN)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from attractor.server.auth import TokenMiddleware
from attractor.server.handlers import Handlers
from attractor.server.runs import RunManager

STATIC = Path(__file__).parent / "static"
#: The Host headers a token-less server answers, besides its own address (it
#: listens on loopback only).
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]


def create_app(
    root: Path,
    token: str | None = None,
    run_flags: dict[str, str] | None = None,
    host: str = "127.0.0.1",
) -> Starlette:
    """The application serving the runs under ``root``; ``token`` guards every request.

    Without a token (``--no-token``, loopback only) a request must name the
    bound ``host`` or a loopback name in its Host header.
    """
    manager = RunManager(root, run_flags)
    h = Handlers(manager)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            manager.attach(group)
            yield
            group.cancel_scope.cancel()  # stop every run; each is saved as interrupted

    routes = [
        Route("/", h.index),
        Route("/pipelines", h.list_runs, methods=["GET"]),
        Route("/pipelines", h.start, methods=["POST"]),
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
        Route("/pipelines/{id}/nodes/{node}/diff", h.node_diff),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    if token:
        middleware = [Middleware(TokenMiddleware, token=token)]
    else:  # loopback only: a page from elsewhere cannot reach it by renaming a host
        allowed = [*LOOPBACK_NAMES, host.strip("[]"), f"[{host.strip('[]')}]"]
        middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed)]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.manager = manager
    return app
