"""The cyclic garbage collector and a run: what the process held before it is set aside.

A full collection walks every object the process tracks: with the modules a run
imports (an SDK's models above all) that is some 10 to 50 milliseconds, spent
whenever an allocation happens to trigger one; a fan-out of 500 commands, or of
64 model branches, met one in most runs. :func:`freeze_once` moves what exists
before the first run of a process (modules, settings, the parsed pipeline) into
the collector's permanent generation (:func:`gc.freeze`): never walked again, so
a full collection costs what the run itself allocated. What a run allocates is
collected as before. Once a process: a later freeze would also keep forever the
garbage of the runs before it.

Reference counting still frees every frozen object nothing refers to; only a
cycle among objects that existed before the first run (say, that run's parsed
pipeline, once the run is over) is never reclaimed: a one-time amount.

The same first run lets :data:`YOUNG` new objects, not Python 3.11's 700, come
between two collections of the youngest generation. A fan-out keeps hundreds of
branches' objects alive at once: at 700, each of its survivors was walked again
in the middle generation's frequent collections (1.2-1.5 ms each, 8-10 ms of a
500-branch fan-out); at 5,000 the collector took 13 ms of that run instead of 23.
A threshold already at least that high, or 0 (collections off), is left alone.
"""

from __future__ import annotations

import gc

#: New objects between two collections of the youngest generation (at the least).
YOUNG = 5000

_frozen: list[bool] = []


def freeze_once() -> None:
    """Set aside, once a process, the objects tracked before its first run (and let
    :data:`YOUNG` new objects come between two young collections)."""
    if _frozen:
        return
    _frozen.append(True)
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if 0 < young < YOUNG:
        gc.set_threshold(YOUNG, middle, old)
