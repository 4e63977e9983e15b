"""The garbage collector of a command-line process: paused while the process starts.

A run's process allocates some 150,000 objects while it loads its modules and sets
the run up, and nearly all of them live until it exits: the collections that walk
them (about 70 in a short run, six of them of the middle generation: 8-10 ms of a
120 ms run) free nothing. :func:`pause` stops the collector for a command that
loads, does one job and exits (``run``, ``resume``, ``fork``, ``lint``: a lint of
100,000 nodes takes a tenth less time, at the same peak memory); :func:`resume`
starts it again once a run has started, after the engine froze what the process
held then (``heap.py``), so that a long run collects its garbage as any
process does. A library caller's process is never touched: only the console
script pauses it.
"""

from __future__ import annotations

import gc

#: The commands the console script pauses the collector for.
SHORT_COMMANDS = frozenset({"run", "resume", "fork", "lint"})

_paused = False


def pause() -> None:
    """Stop the collector until :func:`resume` (unless something stopped it already)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume(*_: object) -> None:
    """Start the collector again if :func:`pause` stopped it (an observer of a run's
    events: the first one, the run's start, does it)."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
