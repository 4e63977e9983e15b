"""``attractor lint FILE...``: report everything wrong with pipeline files.

Imports only the parser and lint modules (and the settings, to read the
config file when a pipeline names MCP servers or ACP agents), so linting never
loads the engine, rich or a model SDK.
"""

from __future__ import annotations

import json

import click

from attractor.errors import Diagnostic, PipelineError

_EPILOG = """\b
Examples:
  attractor lint pipeline.dot
  attractor lint --strict examples/*.dot
  attractor lint --format json pipeline.dot | jq '.[] | select(.severity == "error")'
  attractor lint --format sarif pipeline.dot > attractor.sarif

\b
Exit status: 0 no errors, 1 errors found (or warnings or style notes with --strict),
2 usage error or unreadable file.
"""


def _summary(found: list[Diagnostic], files: int) -> str:
    errors = sum(d.severity == "error" for d in found)
    warnings = sum(d.severity == "warning" for d in found)
    styles = sum(d.severity == "style" for d in found)
    infos = len(found) - errors - warnings - styles
    noun = "file" if files == 1 else "files"
    if not found:
        return f"no problems found in {files} {noun}"
    parts = [f"{errors} error(s)", f"{warnings} warning(s)"]
    if styles:
        parts.append(f"{styles} style")
    if infos:
        parts.append(f"{infos} info")
    return ", ".join(parts) + f" in {files} {noun}"


def format_text_report(found: list[Diagnostic], files: int = 1) -> str:
    """The text report: every diagnostic, then the summary line (ends with a newline)."""
    lines = [d.format_text() for d in found]
    lines.append(_summary(found, files))
    return "\n".join(lines) + "\n"


def unreadable_diagnostic(path: str, error: PipelineError) -> Diagnostic:
    """An unreadable file as an ``unreadable`` diagnostic at line 0."""
    text = str(error).removeprefix(f"{path}: ")
    reason, sep, hint = text.partition("; ")
    return Diagnostic(
        "unreadable", "error", reason, path, 0, 0, fix=hint if sep else "check the path"
    )


def lint_files(paths: list[str]) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Diagnostics of every readable file, and one ``unreadable`` diagnostic per other file.

    Each file is checked by :func:`attractor.checks.check_pipeline`: the lint rules,
    and the ACP agents and MCP servers it names against the config file a run
    here would read (``attractor.toml``, else ``[tool.attractor]`` in
    ``pyproject.toml``), whose ``[mcp_servers]`` tables are checked too.
    """
    from attractor.checks import check_pipeline

    found: list[Diagnostic] = []
    unreadable: list[Diagnostic] = []
    config_seen: set[tuple[str, int, str]] = set()
    for path in paths:
        try:
            _, diagnostics = check_pipeline(path)
        except PipelineError as error:
            unreadable.append(unreadable_diagnostic(path, error))
            continue
        for d in diagnostics:
            if d.file != path and d.rule == "mcp":  # one config file's problem
                mark = (d.file, d.line, d.message)
                if mark in config_seen:
                    continue  # said once for all the files
                config_seen.add(mark)
            found.append(d)
    return found, unreadable


def _document(found: list[Diagnostic], output_format: str) -> str:
    if output_format == "sarif":
        from attractor.linter.sarif import to_sarif

        return json.dumps(to_sarif(found), indent=2)
    return json.dumps([d.to_json() for d in found], indent=2)


def _order(d: Diagnostic) -> tuple[str, int, int, str]:
    return (d.file, d.line, d.column, d.rule)


@click.command(epilog=_EPILOG)
# Not click.Path(dir_okay=False): a directory is reported like any unreadable file, on one line.
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    show_default=True,
    help="text: one FILE:LINE:COL line per finding; json: one array of objects; "
    "sarif: a SARIF 2.1.0 log for code scanning. json and sarif always print one "
    "document, unreadable files included.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 on warnings and style notes too, not only on errors.",
)
def lint(files: tuple[str, ...], output_format: str, strict: bool) -> None:
    """Check pipeline DOT FILEs and report every problem before anything runs."""
    found, unreadable = lint_files(list(files))
    for bad in unreadable:
        click.echo(f"error: {bad.file}: {bad.message}; {bad.fix}", err=True)
    if output_format != "text":
        # One document whatever happened: a script reading stdout sees the
        # unreadable files as error diagnostics, never an empty clean result.
        click.echo(_document(sorted([*unreadable, *found], key=_order), output_format))
    elif len(unreadable) < len(files):
        # With no readable file there is no text report: "no problems found"
        # would read as a clean result.
        click.echo(format_text_report(found, len(files) - len(unreadable)), nl=False)
    failing = any(d.is_error or (strict and d.severity in ("warning", "style")) for d in found)
    raise SystemExit(2 if unreadable else 1 if failing else 0)
