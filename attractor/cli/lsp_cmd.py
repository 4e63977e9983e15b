"""``attractor lsp``: the language server, on stdin and stdout.

pygls is imported only here (it is the ``lsp`` extra), so no other command
loads it.
"""

from __future__ import annotations

import sys

import click

_EPILOG = """\b
Examples:
  attractor lsp
  attractor lsp --debounce 250

\b
Editors start it; it talks the Language Server Protocol on stdin/stdout and
ends when the client exits or closes stdin. docs/editors.md shows VS Code,
Neovim and Helix set-ups.
"""


@click.command(epilog=_EPILOG)
@click.option(
    "--debounce",
    type=click.IntRange(0, 5000),
    default=100,
    show_default=True,
    metavar="MS",
    help="Lint after typing pauses this many milliseconds.",
)
def lsp(debounce: int) -> None:
    """Serve diagnostics, fixes, completion and hover for pipelines to an editor."""
    try:
        from attractor.lsp.server import serve_stdio
    except ImportError as error:
        click.echo(
            f"error: attractor lsp needs pygls ({error}); install it with: "
            "pip install 'attractor[lsp]'",
            err=True,
        )
        sys.exit(2)
    serve_stdio(debounce / 1000)
