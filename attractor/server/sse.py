"""A run's events as Server-Sent Events, replayed from events.jsonl and then followed.

Each event's SSE id is its line number in events.jsonl, so a client that
reconnects with ``Last-Event-ID: N`` gets exactly the events after the N-th.
The stream ends after the run's final event, once no process drives the run.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from attractor.engine.checkpoint import RUNNING
from attractor.engine.inventory import FINAL_EVENTS, EventTail, run_info
from attractor.server.runs import Changes

#: How long a stream waits for a change before it looks at the file again
#: (runs driven by another process announce nothing to this one).
POLL_SECONDS = 0.5
#: A comment line now and then keeps proxies from closing an idle stream.
KEEPALIVE_SECONDS = 15.0


def sse_message(number: int, event: dict[str, object]) -> str:
    """One SSE message: id, event type and the event as JSON data."""
    data = json.dumps(event, ensure_ascii=False, default=str)
    return f"id: {number}\nevent: {event.get('type', 'event')}\ndata: {data}\n\n"


async def event_stream(
    path: Path,
    after: int,
    changes: Changes,
    is_active: Callable[[], bool],
    closing: Callable[[], bool] = lambda: False,
) -> AsyncIterator[str]:
    """Every event after ``after``, then each new one as it is written."""
    tail = EventTail(path, after)
    yield "retry: 2000\n\n"
    idle = 0.0
    while True:
        batch = tail.read()
        if batch:  # one write for what arrived together
            yield "".join(sse_message(number, event) for number, event in batch)
        if batch and batch[-1][1].get("type") in FINAL_EVENTS:
            return
        if not batch and (closing() or not (is_active() or _driven(path))):
            return  # the server stops, or nobody drives the run and every event was sent
        if batch:
            idle = 0.0
            continue  # there may be more already written
        idle += POLL_SECONDS
        if idle >= KEEPALIVE_SECONDS:
            idle = 0.0
            yield ": keep-alive\n\n"
        await changes.wait(POLL_SECONDS)


def _driven(path: Path) -> bool:
    """Whether a process is driving the run now (its manifest says running, and it lives)."""
    return run_info(path).status == RUNNING
