"""Serve the application with uvicorn until interrupted."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import anyio.abc
import uvicorn
from starlette.applications import Starlette

from attractor.errors import UsageError
from attractor.run_status import STOP_SIGNALS, RunStatus
from attractor.server.app import create_app
from attractor.server.auth import (
    TOKEN_FILE,
    is_loopback,
    new_token,
    remove_token_file,
    write_token_file,
)
from attractor.server.runs import RunManager

#: Open event streams get this long to end when the server stops.
GRACEFUL_SECONDS = 3


def check_bind(host: str, token: str | None, no_token: bool = False) -> None:
    """Refuse ``--no-token`` with a token, or anywhere but on a loopback address.

    Raises:
        UsageError: ``--no-token`` is given with a token, or with a ``host``
            other machines can reach.
    """
    if no_token and token:
        raise UsageError(
            "--no-token and a token (--token or ATTRACTOR_SERVE_TOKEN) exclude each other; pick one"
        )
    if no_token and not is_loopback(host):
        raise UsageError(
            f"--no-token is honoured on a loopback address only, and --host {host} is "
            "reachable from other machines; drop --no-token (a token is made for you) "
            "or bind 127.0.0.1"
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
    on_ready: Callable[[str], None] | None = None,
    run_flags: dict[str, str] | None = None,
    no_token: bool = False,
) -> int:
    """Run the server in the foreground; Ctrl-C stops it (runs are saved as interrupted).

    Returns the exit status: 128 plus the number of the signal that stopped it (130
    for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP), as every command exits on one.

    Without ``token`` (and without ``no_token``) a token is made and kept in
    ``ROOT/.attractor/serve.token`` while the server runs. ``on_ready`` gets the
    line to show: the address to open, with a made token in it.
    """
    check_bind(host, token, no_token)
    if not root.is_dir():
        raise UsageError(f"--root {root}: no such directory")
    check_port(host, port)
    root = root.resolve()
    made = not token and not no_token
    if made:
        token = new_token()
        write_token_file(root, token)
    try:
        if on_ready is not None:
            on_ready(_ready_line(root, host, port, token, made))
        app = create_app(root, token, run_flags, host, _page_url(host, port))
        stopped_by = _serve_app(app, host, port)
    finally:
        if made and token:
            remove_token_file(root, token)
    return 0 if stopped_by is None else 128 + stopped_by


def _page_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def _ready_line(root: Path, host: str, port: int, token: str | None, made: bool) -> str:
    url = _page_url(host, port)
    if made:
        where = f"the token is also in {root / TOKEN_FILE}"
        return f"serving {url}?token={token} (root {root}; {where})"
    if token:
        return f"serving {url} (root {root}; open it once as {url}?token=TOKEN)"
    return f"serving {url} (root {root}; no token: --no-token)"


def _serve_app(app: Starlette, host: str, port: int) -> int | None:
    """Serve ``app`` until a signal stops it: that signal's number (None: it stopped
    of itself)."""
    manager: RunManager = app.state.manager
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
    return anyio.run(_serve_until_stopped, _Server(config), manager)


#: The signals that stop the server (and the runs it drives) as Ctrl-C does.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _QuietDrops(logging.Filter):
    """Keeps quiet about an event stream left unfinished on purpose (sse.py drops a
    client that stops taking data); uvicorn would log it as an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing response."


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handlers: ours stop the runs first."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _serve_until_stopped(server: _Server, manager: RunManager) -> int | None:
    """Serve until SIGINT, SIGTERM or SIGHUP, then stop the runs and streams, then uvicorn.

    The signals are taken from before the server starts until it has stopped: a second
    Ctrl-C, or the terminal closing, while the runs save themselves is taken and let be.
    Left to the process's own handler it would end the event loop with every task
    cancelled at once, shields ignored: a command cut between SIGTERM and SIGKILL.
    Returns the number of the first signal (None when uvicorn stopped of itself).
    """
    first: list[int] = []
    async with anyio.create_task_group() as group:

        async def stop() -> None:
            with anyio.CancelScope(shield=True):  # each run saved as the signal says
                await manager.shutdown(
                    STOP_SIGNALS.get(signal.Signals(first[0]), RunStatus.INTERRUPTED)
                )
            server.should_exit = True

        async def watch(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
                task_status.started()
                async for number in signals:
                    first.append(number)
                    group.start_soon(stop)
                    async for _ in signals:
                        pass  # taken: the stop under way finishes as it is

        await group.start(watch)
        await server.serve()
        group.cancel_scope.cancel()
    return first[0] if first else None
