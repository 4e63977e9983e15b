"""The console script's entry point: stop signals first, then everything else.

Importing click and the command group takes tens of milliseconds (seconds on a
loaded machine); a Ctrl-C in that time must already mean exit 130, not click's
``Aborted!`` and exit 1. So this module imports nothing but the signal
handlers before it installs them.
"""

from __future__ import annotations

import sys

from attractor.cli import collector, stop_signals


def main() -> None:
    """Console-script entry point (``attractor``, ``python -m attractor``)."""
    stop_signals.install()
    if sys.argv[1:2] and sys.argv[1] in collector.SHORT_COMMANDS:
        collector.pause()  # until the run starts (see collector.py)
    try:
        from attractor.cli.main import main as run

        stop_signals.check()  # a signal whose exception the imports dropped
    except stop_signals.StopSignal as stop:
        raise SystemExit(stop_signals.settle(stop)) from None
    except Exception as error:  # a signal while a class was created: Python wraps it
        wrapped = stop_signals.found_in(error)
        if wrapped is None:
            raise
        raise SystemExit(stop_signals.settle(wrapped)) from None
    try:
        run()
    except stop_signals.StopSignal as stop:
        # Landed between the imports and the command's own handling (main() ends
        # the process itself otherwise): said, as everywhere else, not a silent 130.
        raise SystemExit(stop_signals.settle(stop)) from None
