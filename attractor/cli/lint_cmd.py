"""``attractor lint FILE...``: report everything wrong with pipeline files.

Imports only the parser and lint modules, so linting never loads the engine,
rich or a model SDK.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from attractor.errors import Diagnostic, PipelineError

_EPILOG = """\b
Examples:
  attractor lint pipeline.dot
  attractor lint --strict examples/*.dot
  attractor lint --format json pipeline.dot | jq '.[] | select(.severity == "error")'

\b
Exit status: 0 no errors, 1 errors found (or warnings with --strict),
2 usage error or unreadable file.
"""


def _summary(found: list[Diagnostic], files: int) -> str:
    errors = sum(d.severity == "error" for d in found)
    warnings = sum(d.severity == "warning" for d in found)
    infos = len(found) - errors - warnings
    noun = "file" if files == 1 else "files"
    if not found:
        return f"no problems found in {files} {noun}"
    parts = [f"{errors} error(s)", f"{warnings} warning(s)"]
    if infos:
        parts.append(f"{infos} info")
    return ", ".join(parts) + f" in {files} {noun}"


def format_text_report(found: list[Diagnostic], files: int = 1) -> str:
    """The text report: every diagnostic, then the summary line (ends with a newline)."""
    lines = [d.format_text() for d in found]
    lines.append(_summary(found, files))
    return "\n".join(lines) + "\n"


def lint_files(paths: list[str]) -> tuple[list[Diagnostic], list[str]]:
    """Diagnostics of every readable file, and one message per unreadable file."""
    from attractor.linter.prepare import prepare

    found: list[Diagnostic] = []
    unreadable: list[str] = []
    for path in paths:
        try:
            found.extend(prepare(Path(path), file=path)[1])
        except PipelineError as error:
            unreadable.append(str(error))
    return found, unreadable


@click.command(epilog=_EPILOG)
# Not click.Path(dir_okay=False): a directory is reported like any unreadable file, on one line.
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one FILE:LINE:COL line per finding; json: one array of objects.",
)
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too, not only on errors.")
def lint(files: tuple[str, ...], output_format: str, strict: bool) -> None:
    """Check pipeline DOT FILEs and report every problem before anything runs."""
    found, unreadable = lint_files(list(files))
    for message in unreadable:
        click.echo(f"attractor lint: {message}", err=True)
    # With no readable file there is no report: an empty JSON array or "no
    # problems found" on stdout would read as a clean result.
    if len(unreadable) < len(files):
        if output_format == "json":
            click.echo(json.dumps([d.to_json() for d in found], indent=2))
        else:
            click.echo(format_text_report(found, len(files) - len(unreadable)), nl=False)
    failing = any(d.is_error or (strict and d.severity == "warning") for d in found)
    raise SystemExit(2 if unreadable else 1 if failing else 0)
