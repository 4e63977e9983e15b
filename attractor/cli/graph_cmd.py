"""``attractor graph FILE [--run RUN_DIR] [-o OUT]``: the pipeline as a picture."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from attractor.errors import AttractorError, UsageError, ValidationError

_EPILOG = """\b
Examples:
  attractor graph pipeline.dot -o pipeline.svg
  attractor graph pipeline.dot --run .attractor/runs/20261122T040646Z-feature -o run.png
  attractor graph pipeline.dot > pipeline.svg

\b
Node colours with --run: pending grey, running blue, success green, partial
yellow, fail red, skipped dark grey, retry orange, stopped purple.
Exit status: 0 drawn, 2 usage error, invalid pipeline or a --run of another
pipeline.
"""


@click.command(epilog=_EPILOG)
@click.argument("file", metavar="FILE")
@click.option("--run", "run_dir", metavar="RUN_DIR", help="Colour nodes by their state in RUN_DIR.")
@click.option(
    "-o",
    "--output",
    metavar="OUT",
    help="Write to OUT (.svg, .png or .pdf); without it, SVG goes to stdout.",
)
def graph(file: str, run_dir: str | None, output: str | None) -> None:
    """Draw the pipeline in FILE: node types, labels, edge labels and conditions."""
    from attractor.api import draw
    from attractor.render import FORMATS

    fmt = "svg"
    if output is not None:
        fmt = Path(output).suffix.lower().lstrip(".")
        if fmt not in FORMATS:
            _fail(UsageError(f"-o {output}: name a .svg, .png or .pdf file"))
    if not Path(file).exists():
        _fail(UsageError(f"{file}: no such pipeline file; check the path"))
    try:
        picture = draw(file, run_dir=run_dir, fmt=fmt)
    except ValidationError as err:
        from attractor.cli.lint_cmd import format_text_report

        click.echo(format_text_report(err.diagnostics, 1), err=True, nl=False)
        raise SystemExit(err.exit_code) from None
    except AttractorError as err:
        _fail(err)
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(picture)
        sys.stdout.buffer.flush()
        return
    try:
        Path(output).write_bytes(picture)
    except OSError as exc:
        _fail(UsageError(f"-o {output}: cannot write: {exc.strerror}"))
    click.echo(f"wrote {output}", err=True)


def _fail(err: AttractorError) -> NoReturn:
    click.echo(f"error: {err}", err=True)
    raise SystemExit(err.exit_code)
