"""``attractor init [TEMPLATE] [FILE]``: write a commented starter pipeline.

Every template lints clean and runs offline with ``--backend simulate``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import NoReturn

import click

from attractor.fileio.writes import USER_FILE, atomic_write_text

#: template name -> (default file name, one-line description)
TEMPLATES = {
    "coding": ("pipeline.dot", "plan -> implement -> test loop -> human review gate"),
    "review": ("review.dot", "three reviews in parallel, a fan-in, then a summary"),
    "ci": ("ci.dot", "tool steps only (whitespace, compile, test): no model needed"),
}

_EPILOG = """\b
Examples:
  attractor init
  attractor init review
  attractor init ci ci/pipeline.dot
  attractor init --list
"""


def template_text(name: str) -> str:
    """The text of template ``name``."""
    return (resources.files("attractor") / "templates" / f"{name}.dot").read_text("utf-8")


def _pick(template: str | None, file: str | None) -> tuple[str, Path]:
    if template is not None and file is None and template.endswith(".dot"):
        return "coding", Path(template)  # attractor init my.dot
    name = template or "coding"
    if name not in TEMPLATES:
        known = ", ".join(TEMPLATES)
        raise click.UsageError(f"no template {name!r}; use one of {known}")
    return name, Path(file or TEMPLATES[name][0])


@click.command(epilog=_EPILOG)
@click.argument("template", required=False)
@click.argument("file", required=False)
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@click.option("--list", "list_all", is_flag=True, help="List the templates.")
def init(template: str | None, file: str | None, force: bool, list_all: bool) -> None:
    """Write starter pipeline TEMPLATE (default coding) to FILE."""
    if list_all:
        for name, (default, text) in TEMPLATES.items():
            click.echo(f"{name:8} {default:14} {text}")
        return
    name, path = _pick(template, file)
    if path.is_dir():
        _fail(f"{path} is a directory; name the pipeline file to write")
    if path.exists() and not force:
        _fail(f"{path} exists; pass --force to overwrite it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        _fail(f"cannot create {path.parent}: {error.strerror}")
    try:
        # The user's file: it follows the umask, and one overwritten keeps its mode.
        atomic_write_text(path, template_text(name), mode=USER_FILE)
    except OSError as error:
        _fail(f"cannot write {path}: {error.strerror}; choose a folder you can write to")
    click.echo(f"wrote {path} ({name}: {TEMPLATES[name][1]})")
    click.echo(f"next: attractor lint {path} && attractor run {path} --dry-run")


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(2)
