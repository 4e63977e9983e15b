"""``attractor migrate FILE --from DIALECT [--write]``: convert another engine's pipeline.

Imports only the DOT modules.
"""

from __future__ import annotations

from pathlib import Path

import click

from attractor.errors import PipelineError

_EPILOG = """\b
Examples:
  attractor migrate pipeline.dot --from kilroy > converted.dot
  attractor migrate pipeline.dot --from kilroy --write

\b
Exit status: 0 everything converted, 1 converted but some constructs are listed
for you to change (each FILE:LINE:COL on stderr), 2 unreadable file, one that
does not parse, or an unknown dialect.
"""


@click.command(epilog=_EPILOG)
@click.argument("file", type=click.Path())
@click.option(
    "--from",
    "dialect",
    required=True,
    type=click.Choice(["kilroy"]),
    help="The engine the pipeline was written for.",
)
@click.option("--write", is_flag=True, help="Rewrite FILE in place instead of printing it.")
def migrate(file: str, dialect: str, write: bool) -> None:
    """Convert a pipeline written for another engine: what aliases cannot carry
    (kilroy: timeouts in bare seconds) is rewritten, what cannot be rewritten is
    listed with its FILE:LINE:COL, and the result is in canonical form
    (attractor fmt). Prompts and comments are kept as written."""
    from attractor.dot.migrate import migrate_file
    from attractor.fileio.writes import USER_FILE, atomic_write_text

    try:
        result = migrate_file(file, dialect)
    except PipelineError as error:
        text = str(error).strip().splitlines()[0]
        click.echo(
            f"attractor migrate: {text if text.startswith(file) else f'{file}: {text}'}", err=True
        )
        raise SystemExit(2) from None
    if write:
        atomic_write_text(Path(file), result.text, mode=USER_FILE)
        click.echo(f"migrated {file}", err=True)
    else:
        click.echo(result.text, nl=False)
    for line in result.converted:
        click.echo(f"converted: {line}", err=True)
    for item in result.unconverted:
        click.echo(f"{item.format_text()}", err=True)
    if result.unconverted:
        click.echo(
            f"{len(result.unconverted)} construct(s) could not be converted; "
            "change them by hand, then run attractor lint",
            err=True,
        )
    raise SystemExit(1 if result.unconverted else 0)
