"""``attractor diff RUN_DIR [NODE] [--stat]``: what a run, or one stage of it, changed."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from attractor.cli import stop_signals
from attractor.cli.run_arg import missing, no_such_step, run_dir_of
from attractor.errors import AttractorError, UsageError
from attractor.settings import environment_redactor
from attractor.workspace.diff import run_diff

_EPILOG = """\b
Examples:
  attractor diff .attractor/runs/20261122T040646Z-feature
  attractor diff runs/nightly work --stat

Secrets (the values of this shell's secret variables, strings shaped like API
keys) are shown as [redacted:NAME], as on the web page and in the API.

Exit status: 0, 2 when the run kept no checkpoints or NODE has none.
"""


@click.command(epilog=_EPILOG)
@click.argument("run_dir", metavar="RUN_DIR")
@click.argument("node", metavar="[NODE]", required=False)
@click.option("--stat", is_flag=True, help="The summary (files and lines changed), not the diff.")
def diff(run_dir: str, node: str | None, stat: bool) -> NoReturn:
    """Print what the run in RUN_DIR changed, or what its stage NODE changed, as a diff.

    A file a stage wrote may hold a secret (``printenv > leak.txt``): what is
    printed is redacted like the API's diff.
    """
    try:
        problem = missing(run_dir)
        if problem is None and node is not None:
            step = no_such_step(run_dir_of(run_dir), node)
            problem = None if step is None else f"{run_dir}: {step}"
        if problem is not None:
            raise UsageError(problem)
        text = stop_signals.run(lambda: run_diff(run_dir_of(run_dir), node, stat=stat))
    except AttractorError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(err.exit_code)
    click.echo(environment_redactor().text(text), nl=False)
    sys.exit(0)
