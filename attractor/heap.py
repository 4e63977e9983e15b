"""The cyclic garbage collector and a run: set aside what the process held before
it, and kept out of the way while a fan-out starts its branches.

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

A fan-out that starts many branches at once allocates, in one burst, objects that
live as long as their branch; a collection in the middle of the burst walks all
of them while every branch not yet started waits (a collection of the middle
generation took 19-22 ms of a 500-branch fan-out, right among its starts).
:class:`Pause` holds automatic collections back while the event
loop is busy and lets them run at its first idle moment (the branches waiting
on their commands or models), when they cost nobody any time. What is due then
runs at the next allocation, by the interpreter's own rules. The pause is
bounded: it ends after :data:`CAP` net new objects or :data:`LONGEST` seconds
even if the loop never idles.
"""

from __future__ import annotations

import gc

import anyio

#: New objects between two collections of the youngest generation (at the least).
YOUNG = 5000

#: How often a pause looks whether the event loop went idle (seconds).
TICK = 0.001
#: How late a tick may wake and still count as the loop having been idle:
#: a busy loop runs many tasks' steps before it gets to the timer.
SLACK = 0.002
#: Idle ticks in a row that end a pause.
QUIET_TICKS = 2
#: Net new objects the collector tracks after which a pause ends, idle or not
#: (some 40 times what triggers a young collection: tens of megabytes at most).
CAP = 200_000
#: The longest a pause lasts (seconds).
LONGEST = 2.0

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


class _Pauses:
    """How many pauses are in force, and whether the first one turned collection off."""

    count = 0
    turned_off = False


class Pause:
    """Automatic collections held back from now until the event loop first idles
    (bounded by :data:`CAP` and :data:`LONGEST`), or :meth:`end` if sooner.

    Start :meth:`watch` in the task group of the burst (it returns once the loop
    idles) and call :meth:`end` when the burst's tasks are done, whatever happened
    (it cancels the watch). Pauses nest: collection resumes when the last one ends,
    and only if the first one stopped it.
    """

    def __init__(self) -> None:
        if _Pauses.count == 0:
            # A collector someone else stopped stays as they left it.
            _Pauses.turned_off = gc.isenabled()
            if _Pauses.turned_off:
                gc.disable()
        _Pauses.count += 1
        self._held = True
        self._watching = anyio.CancelScope()

    async def watch(self) -> None:
        try:
            with self._watching:
                await _until_idle()
        finally:
            self.end()

    def end(self) -> None:
        self._watching.cancel()
        if self._held:
            self._held = False
            _Pauses.count -= 1
            if _Pauses.count == 0 and _Pauses.turned_off:
                _Pauses.turned_off = False
                gc.enable()


async def _until_idle() -> None:
    """Return once the loop woke this task on time :data:`QUIET_TICKS` times in a row
    (or the pause reached :data:`CAP` objects or :data:`LONGEST` seconds)."""
    ends = anyio.current_time() + LONGEST
    quiet = 0
    while quiet < QUIET_TICKS and gc.get_count()[0] < CAP:
        due = anyio.current_time() + TICK
        if due > ends:
            return
        await anyio.sleep(TICK)
        quiet = quiet + 1 if anyio.current_time() - due < SLACK else 0
