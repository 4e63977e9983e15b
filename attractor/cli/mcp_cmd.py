"""``attractor mcp``: attractor as an MCP server, on stdin and stdout.

The ``mcp`` SDK is imported only here (it is the ``mcp`` extra), so no other
command loads it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from attractor.cli import stop_signals

_EPILOG = """\b
Examples:
  attractor mcp
  attractor mcp --root examples

\b
An MCP client (Claude Code, Codex, an editor) starts it; it speaks MCP on
stdin/stdout and ends when the client closes stdin. Tools: lint, run, status,
answer, cancel, resume, list_runs, read_stage. Register it with Claude Code as
`claude mcp add attractor -- attractor mcp --root DIR`; README.md shows Codex
too, and docs/agent.md describes the tools.
"""


@click.command(epilog=_EPILOG)
@click.option(
    "--root",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, exists=True),
    help="Folder of pipelines and runs (.attractor/runs under it); paths stay inside.",
)
@click.option(
    "--executor",
    metavar="NAME",
    help="Where runs execute: local (default) or ray (ATTRACTOR_EXECUTOR).",
)
def mcp(root: str, executor: str | None) -> None:
    """Serve attractor's tools (lint, run, status, answer, cancel, resume, ...) over MCP."""
    try:
        from attractor.server.mcp_server import log_to_stderr, serve_stdio
    except ImportError as error:
        click.echo(
            f"error: attractor mcp needs the MCP SDK ({error}); install it with: "
            "pip install 'attractor[mcp]'",
            err=True,
        )
        sys.exit(2)
    log_to_stderr()
    flags = {"executor": executor} if executor else {}
    stop_signals.run(serve_stdio, Path(root).resolve(), flags)
