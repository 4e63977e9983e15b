"""``attractor fmt FILE... [--check]``: rewrite pipelines in canonical form.

Imports only the DOT modules: formatting never loads the linter or the engine.
"""

from __future__ import annotations

from pathlib import Path

import click

from attractor.errors import PipelineError

_EPILOG = """\b
Examples:
  attractor fmt pipeline.dot
  attractor fmt --check pipeline.dot        # in CI or a pre-commit hook

\b
Exit status: 0 nothing to change (or files rewritten), 1 with --check when a
file would change, 2 unreadable file or one that does not parse.
"""


@click.command(epilog=_EPILOG)
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing; list each file that would change and exit 1 if any would.",
)
def fmt(files: tuple[str, ...], check: bool) -> None:
    """Rewrite pipeline DOT FILEs in canonical form: commas between attributes,
    canonical names for aliases, shape and type first, four-space indentation.
    Comments, blank lines and every string (prompts) are kept byte for byte."""
    from attractor.dot.formatter import format_file as format_pipeline
    from attractor.fileio.writes import USER_FILE, atomic_write_text

    failed = changed = False
    for path in files:
        try:
            before, after = format_pipeline(path)
        except PipelineError as error:
            click.echo(f"error: {_one_line(path, error)}", err=True)
            failed = True
            continue
        if before == after:
            continue
        changed = True
        if check:
            click.echo(f"{path}: would be reformatted (run: attractor fmt {path})")
        else:
            atomic_write_text(Path(path), after, mode=USER_FILE)  # keeps the file's mode
            click.echo(f"formatted {path}")
    raise SystemExit(2 if failed else 1 if check and changed else 0)


def _one_line(path: str, error: PipelineError) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text if text.startswith(path) else f"{path}: {text}"
