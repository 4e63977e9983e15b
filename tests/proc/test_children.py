"""Children started together are awaited by the event loop itself, not a thread each."""

from __future__ import annotations

import threading

import anyio
from anyio.abc import Process

from attractor.proc.children import watch_children
from attractor.proc.spawn import HAS_PIDFD


def _waiting_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if "waitpid" in t.name]


def test_children_running_together_have_no_thread_each_and_report_their_codes() -> None:
    watch_children()

    async def together() -> tuple[list[str], list[int | None]]:
        # Each child waits for its stdin to close: all of them run at once here.
        children: list[Process] = [
            await anyio.open_process(["sh", "-c", f"cat >/dev/null; exit {n}"]) for n in range(8)
        ]
        waiting = _waiting_threads()
        for child in children:
            assert child.stdin is not None
            await child.stdin.aclose()
        codes = [await child.wait() for child in children]
        for child in children:
            await child.aclose()
        return waiting, codes

    waiting, codes = anyio.run(together)
    assert codes == list(range(8))
    # Python 3.11's default starts an "asyncio-waitpid-N" thread a child; with pidfds, none.
    assert waiting == [] or not HAS_PIDFD
