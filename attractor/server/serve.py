"""Serve the application with uvicorn until interrupted."""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import uvicorn

from attractor.errors import UsageError
from attractor.server.app import create_app
from attractor.server.auth import is_loopback
from attractor.server.runs import RunManager

#: Open event streams get this long to end when the server stops.
GRACEFUL_SECONDS = 3


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token.

    Raises:
        UsageError: ``host`` is not a loopback address and no token is set.
    """
    if not is_loopback(host) and not token:
        raise UsageError(
            f"--host {host} is reachable from other machines; set a token with --token "
            "or ATTRACTOR_SERVE_TOKEN (or bind 127.0.0.1)"
        )


def check_port(host: str, port: int) -> None:
    """Refuse a port that cannot be listened on, before anything starts.

    Raises:
        UsageError: the address is taken or cannot be bound (the reason is named).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            raise UsageError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                "pass another --port or --host, or stop what uses it"
            ) from None


def serve(
    root: Path,
    host: str,
    port: int,
    token: str | None,
    on_ready: Callable[[], None] | None = None,
    run_flags: dict[str, str] | None = None,
) -> None:
    """Run the server in the foreground; Ctrl-C stops it (runs are saved as interrupted)."""
    check_bind(host, token)
    if not root.is_dir():
        raise UsageError(f"--root {root}: no such directory")
    check_port(host, port)
    if on_ready is not None:
        on_ready()
    app = create_app(root.resolve(), token, run_flags)
    manager: RunManager = app.state.manager
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    anyio.run(_serve_until_stopped, _Server(config), manager)


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handlers: ours stop the runs first."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _serve_until_stopped(server: _Server, manager: RunManager) -> None:
    """Serve until SIGINT or SIGTERM, then stop the runs and streams, then uvicorn."""
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    with anyio.CancelScope(shield=True):
                        await manager.shutdown()
                    server.should_exit = True
                    return

        group.start_soon(watch)
        await server.serve()
        group.cancel_scope.cancel()
