"""``attractor logs RUN_DIR [NODE] [-f]``: a run's step output and agent tool calls.

Exit codes: 0 shown (with ``-f``: the run ended), 2 not a run directory or a
node the pipeline does not have, 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import NoReturn

import click

from attractor.cli.display import silence_broken_pipe
from attractor.cli.run_arg import missing, no_such_step, run_dir_of
from attractor.cli.step_logs import AnsiMode, LogPrinter

_EPILOG = """\b
Examples:
  attractor logs .attractor/runs/20261122T040646Z-feature
  attractor logs runs/nightly check -f
  attractor logs runs/nightly work --ansi | cat

\b
Every visit and attempt of each step is shown in the order it ran: a tool
step's stdout and stderr, an agent's tool calls with the end of each result.
With -f the command follows the run until it ends (Ctrl-C stops following).
ANSI escapes are taken out unless stdout is a terminal (colours kept) or
--ansi is given (every escape kept, as the command wrote it).
Exit status: 0 shown, 2 not a run directory or no such node, 130 interrupted.
"""

#: Seconds between two looks at the events file while following.
POLL = 0.2


@click.command(epilog=_EPILOG)
@click.argument("run_dir", metavar="RUN_DIR")
@click.argument("node", metavar="[NODE]", required=False)
@click.option("-f", "--follow", is_flag=True, help="Keep following until the run ends.")
@click.option(
    "--ansi", is_flag=True, help="Keep the output's ANSI escapes, also when not on a terminal."
)
def logs(run_dir: str, node: str | None, follow: bool, ansi: bool) -> NoReturn:
    """Show the output of a run's steps (or of NODE's), every visit; -f follows it live."""
    from attractor.runview.inventory import EventTail
    from attractor.runview.listing import is_run_dir, run_status

    path = run_dir_of(run_dir)
    problem = missing(run_dir)
    if problem is not None:
        _usage(problem)
    if not path.is_dir() or not is_run_dir(path):
        _usage(
            f"{run_dir}: not a run directory (no manifest.json or checkpoint.json); "
            "pass a directory that attractor run printed, or list them with attractor runs"
        )
    if node is not None:
        problem = no_such_step(path, node)
        if problem is not None:
            _usage(f"{run_dir}: {problem}")
    mode: AnsiMode = "raw" if ansi else ("colours" if sys.stdout.isatty() else "strip")
    printer = LogPrinter(path, _writer(), node=node, ansi=mode)
    tail = EventTail(path)
    while True:
        batch = tail.read()
        for _, event in batch:
            printer.event(event)
        if follow:
            sys.stdout.flush()
        if batch:
            continue
        if not follow or run_status(path) != "running":
            # One more look: the last events may have come as the run ended.
            for _, event in tail.read():
                printer.event(event)
            break
        time.sleep(POLL)
    if not printer.ended:
        printer.finish()
    sys.stdout.flush()
    sys.exit(0)


def _writer() -> Callable[[str], None]:
    def write(text: str) -> None:
        try:
            sys.stdout.write(text)
        except BrokenPipeError:  # | head: the reader has all it wants
            silence_broken_pipe(sys.stdout)
            sys.exit(0)

    return write


def _usage(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)
