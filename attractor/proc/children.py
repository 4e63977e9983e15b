"""How this process learns that a child it started has ended (asyncio, Python 3.11).

Python 3.11's asyncio waits for each child process in a thread of its own
(``ThreadedChildWatcher``), and the event loop stops until that thread has
started: about a millisecond a child, in turn. The 64 branches of a fan-out in
worktrees start a few hundred git commands at once, and each waited for the
one before it. :func:`watch_children` has the running loop watch a pidfd of
each child instead (Linux 5.3 and later), as Python 3.12 does by default, with
3.12's watcher: any loop, any thread.

:func:`open_process` is how attractor starts a child through anyio: with that
watcher, and whole. asyncio connects a new child's pipes a few loop turns after
the child started; a cancellation that came in between (a run's ``--timeout``,
a cancelled branch) killed the child without awaiting it, left alive what it
had started in its process group, and gave the caller no process to stop.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import anyio
from anyio.abc import Process

from attractor.proc.spawn import HAS_PIDFD

_chosen: list[bool] = []


def watch_children() -> None:
    """Have asyncio learn of its children's ends through pidfds (once; where it helps)."""
    if _chosen:
        return
    _chosen.append(True)
    if sys.version_info >= (3, 12) or not HAS_PIDFD:
        return  # 3.12 chooses pidfds itself; without them, the threads it is
    # anyio starts processes through asyncio and has no say in how they are awaited.
    import asyncio  # noqa: TID251

    policy = asyncio.get_event_loop_policy()
    if type(policy) is asyncio.DefaultEventLoopPolicy:  # not uvloop's, nor a test's own
        policy.set_child_watcher(_watcher(asyncio))


async def open_process(argv: Sequence[str], **options: Any) -> Process:
    """:func:`anyio.open_process` of ``argv`` with ``options``, handed over whole.

    The start runs shielded (a few loop turns): a cancellation then reaches the
    caller at its next wait, where its own clean-up stops and awaits the child.

    Raises:
        OSError: the program cannot be started (not found, not executable).
    """
    watch_children()
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(list(argv), **options)
    return process


def _watcher(asyncio: Any) -> Any:
    """Python 3.12's ``PidfdChildWatcher``: the loop that starts a child watches it."""

    class PidfdWatcher(asyncio.AbstractChildWatcher):  # type: ignore[misc]
        def __enter__(self) -> PidfdWatcher:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def is_active(self) -> bool:
            return True

        def close(self) -> None:
            pass

        def attach_loop(self, loop: object) -> None:
            pass

        def add_child_handler(self, pid: int, callback: Any, *args: Any) -> None:
            loop = asyncio.get_running_loop()
            pidfd = os.pidfd_open(pid)
            loop.add_reader(pidfd, self._do_wait, loop, pid, pidfd, callback, args)

        def _do_wait(
            self, loop: Any, pid: int, pidfd: int, callback: Any, args: tuple[Any, ...]
        ) -> None:
            loop.remove_reader(pidfd)
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:  # reaped elsewhere
                code = 255
            else:
                code = os.waitstatus_to_exitcode(status)
            os.close(pidfd)
            callback(pid, code, *args)

        def remove_child_handler(self, pid: int) -> bool:
            return True  # the reader goes when the child ends, as in 3.12

    return PidfdWatcher()
