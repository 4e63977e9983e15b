"""``attractor serve``: the HTTP API and the web page for the runs under a root."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from attractor.errors import AttractorError

_EPILOG = """\b
Examples:
  attractor serve                          # prints http://127.0.0.1:8700/?token=...
  attractor serve --root ~/work --port 9000
  ATTRACTOR_SERVE_TOKEN=secret attractor serve --host 0.0.0.0

Every request needs the token: a browser opens the printed address once (its
?token=... sets a cookie), clients send 'Authorization: Bearer TOKEN'. A token
the server makes is kept in ROOT/.attractor/serve.token (mode 0600) while it
runs. --no-token turns the check off, on a loopback address only.
"""


@click.command(epilog=_EPILOG)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--root",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder of pipelines and runs (.attractor/runs under it); request paths stay inside.",
)
@click.option(
    "--token",
    envvar="ATTRACTOR_SERVE_TOKEN",
    help="The token every request must carry (env ATTRACTOR_SERVE_TOKEN); default: a new one.",
)
@click.option(
    "--no-token",
    is_flag=True,
    help="Ask no token (loopback addresses only): any local process may then start runs.",
)
@click.option(
    "--executor",
    metavar="NAME",
    help="Where runs execute: local (default) or ray (ATTRACTOR_EXECUTOR).",
)
@click.option(
    "--ray-address",
    metavar="ADDR",
    help="Ray cluster to join (auto, ray://HOST:10001); default: start one.",
)
def serve(
    host: str,
    port: int,
    root: str,
    token: str | None,
    no_token: bool,
    executor: str | None,
    ray_address: str | None,
) -> NoReturn:
    """Serve the HTTP API, live event streams and the web page."""
    from attractor.server.serve import serve as run_server

    try:
        code = run_server(
            Path(root),
            host,
            port,
            token,
            run_flags={
                k: v
                for k, v in (("executor", executor), ("ray_address", ray_address))
                if v is not None
            },
            on_ready=lambda line: click.echo(line, err=True),
            no_token=no_token,
        )
    except AttractorError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(err.exit_code)
    sys.exit(code)
