"""The ``attractor`` command group.

Subcommands live in their own modules and are imported only when invoked, so
``attractor lint`` never pays for importing the engine or a model SDK.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading

import click

from attractor.cli import stop_signals
from attractor.version import __version__

#: command name -> "module:attribute" of its click command.
_COMMANDS = {
    "diff": "attractor.cli.diff_cmd:diff",
    "explain": "attractor.cli.explain_cmd:explain",
    "fmt": "attractor.cli.fmt_cmd:fmt",
    "fork": "attractor.cli.run_cmd:fork",
    "init": "attractor.cli.init_cmd:init",
    "graph": "attractor.cli.graph_cmd:graph",
    "lint": "attractor.cli.lint_cmd:lint",
    "logs": "attractor.cli.logs_cmd:logs",
    "lsp": "attractor.cli.lsp_cmd:lsp",
    "migrate": "attractor.cli.migrate_cmd:migrate",
    "mcp": "attractor.cli.mcp_cmd:mcp",
    "run": "attractor.cli.run_cmd:run",
    "runs": "attractor.cli.runs_cmd:runs",
    "status": "attractor.cli.status_cmd:status",
    "resume": "attractor.cli.run_cmd:resume",
    "serve": "attractor.cli.serve_cmd:serve",
}


class _LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        # A KeyboardInterrupt that reaches click (Python's own SIGINT handler,
        # put back by asyncio after a run) would print "Aborted!" and exit 1.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise stop_signals.StopSignal(signal.SIGINT) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


_EPILOG = """\b
Examples:
  attractor init
  attractor lint pipeline.dot
  attractor run pipeline.dot --dry-run
  attractor run pipeline.dot --backend simulate --auto-approve
  attractor explain shape_known
  eval "$(_ATTRACTOR_COMPLETE=bash_source attractor)"

\b
The last line turns on tab completion in bash; docs/cli.md shows zsh and fish.
"""


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_EPILOG,
)
@click.version_option(__version__, prog_name="attractor")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Run multi-stage AI and coding-agent workflows written as Graphviz DOT graphs."""
    from attractor.linter.handler_types import closed_handler_types

    # No handler can be registered from the command line: lint and run treat an
    # unknown node type as an error (the library, where code may register one,
    # as a warning).
    ctx.with_resource(closed_handler_types())


def main() -> None:
    """Run the command line (the console script reaches it through ``entry.main``)."""
    stop_signals.install()
    try:
        try:
            cli.main(standalone_mode=True)
        except (Exception, BaseExceptionGroup) as error:  # a stop signal in a group, or wrapped
            stop = stop_signals.found_in(error)
            if stop is None:
                raise
            raise stop from None
    except stop_signals.StopSignal as stop:
        _exit(stop_signals.settle(stop))
    except SystemExit as done:
        _exit(done.code)
    except OSError as error:  # the output's disk is full, or a file broke under a command
        _exit(_io_failure(error))


#: ``EX_IOERR``: the exit code of a command that could not write (as a run's full disk).
_IO_FAILURE = 74


def _io_failure(error: OSError) -> int:
    """Say in one line why a command could not read or write; its exit code."""
    reason = error.strerror or str(error)
    # No file named: what failed is the command's own output (a full disk under it).
    said = f"{error.filename}: {reason}" if error.filename else f"cannot write the output: {reason}"
    with contextlib.suppress(OSError):
        print(f"error: {said}", file=sys.stderr)
    return _IO_FAILURE


#: Seconds the way out (threads still ending, exit handlers) may take once the command
#: is done: an exit handler that never returns (Ray's leaving its cluster has been seen
#: to hang in a channel's close) must not keep a finished command's process alive.
TEARDOWN_LIMIT = 30.0


def _exit(code: int | str | None) -> None:
    """Exit with ``code``, skipping the interpreter's teardown (``os._exit``).

    By now every file a command wrote is closed. Python's own way out would then
    free the process's objects one by one (some 30,000 after a short run: 10-40%
    of a short command's wall time here). So this does, in Python's order, what
    that exit does that anyone can see: wait for the threads that are not
    daemons (``threading._shutdown``, the call Python's exit makes first: an
    event loop's worker thread still ending, a caller's own thread), run the exit
    handlers (the method cache, temporary folders, logging), flush the standard
    streams; then it ends the process. A cancelled tool's thread is a daemon, so
    nothing waits for it: it may be inside native code (a long RE2 search), and
    stopping it while the interpreter shuts down would abort the process. What
    still waits after :data:`TEARDOWN_LIMIT` is left, with a warning, and the
    process ends with the command's exit code all the same.
    """
    number = code if isinstance(code, int) else (0 if code is None else 1)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
    number = _flushed(number)  # what the command said is out before anything can wait
    watchdog = threading.Timer(TEARDOWN_LIMIT, _cut_short, (number,))
    watchdog.daemon = True  # not among the threads the way out waits for
    watchdog.start()
    threading._shutdown()  # type: ignore[attr-defined]  # CPython's, since 2.x
    atexit._run_exitfuncs()
    watchdog.cancel()
    os._exit(_flushed(number))


def _flushed(number: int) -> int:
    """Flush the standard streams; ``number``, or 120 when one could not be flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            # Python's own exit reports a standard stream it could not flush so.
            number = number or 120
    return number


def _cut_short(number: int) -> None:
    """End the process whose way out has waited :data:`TEARDOWN_LIMIT` (the watchdog's
    thread: the main one is the one waiting, so this writes to the descriptor)."""
    said = (
        f"warning: the command was done but its process still waited after "
        f"{TEARDOWN_LIMIT:g}s (a thread or an exit handler that did not end); ended it\n"
    )
    with contextlib.suppress(OSError):
        os.write(2, said.encode())
    os._exit(number)
