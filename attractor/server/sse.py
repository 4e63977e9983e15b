"""A run's events as Server-Sent Events, replayed from events.jsonl and then followed.

Each event's SSE id is its line number in events.jsonl, so a client that
reconnects with ``Last-Event-ID: N`` gets exactly the events after the N-th.
The stream ends after the run's final event, once no process drives the run.

A stream costs little however large the file: it reads :data:`STREAM_CHUNK`
bytes of events.jsonl at a time (in a worker thread) and sends them before it
reads more, and the server writes no more to a connection whose client has not
taken what it was sent. A client that takes nothing for :data:`SEND_TIMEOUT`
seconds is dropped; browsers reconnect by themselves with ``Last-Event-ID``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from attractor.run_status import RunStatus
from attractor.runview.inventory import FINAL_EVENTS, EventTail
from attractor.runview.listing import run_status
from attractor.server.runs import Changes

#: How long a stream waits for a change before it looks at the file again
#: (runs driven by another process announce nothing to this one).
POLL_SECONDS = 0.5
#: A comment line now and then keeps proxies from closing an idle stream.
KEEPALIVE_SECONDS = 15.0
#: Bytes of events.jsonl a stream reads, and so may have waiting, at a time.
STREAM_CHUNK = 64 * 1024
#: A client that takes no data for this long is dropped (it reconnects).
SEND_TIMEOUT = 30.0


class _StreamTail(EventTail):
    CHUNK = STREAM_CHUNK


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
) -> AsyncGenerator[str, None]:
    """Every event after ``after``, then each new one as it is written."""
    tail = _StreamTail(path, after)
    yield "retry: 2000\n\n"
    idle = 0.0
    while True:
        batch, driven = await anyio.to_thread.run_sync(_look, tail, path)
        if batch:  # one write for what arrived together
            yield "".join(sse_message(number, event) for number, event in batch)
        if batch and batch[-1][1].get("type") in FINAL_EVENTS:
            return
        if not batch and (closing() or not (is_active() or driven)):
            return  # the server stops, or nobody drives the run and every event was sent
        if batch:
            idle = 0.0
            continue  # there may be more already written
        idle += POLL_SECONDS
        if idle >= KEEPALIVE_SECONDS:
            idle = 0.0
            yield ": keep-alive\n\n"
        await changes.wait(POLL_SECONDS)


def _look(tail: EventTail, path: Path) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """The next events, and (when there are none) whether a process drives the run."""
    batch = tail.read()
    return batch, not batch and run_status(path) == RunStatus.RUNNING


class EventStreamResponse(StreamingResponse):
    """``text/event-stream`` from ``stream``; drops a client that stops taking data.

    A dropped client's response ends unfinished (the connection closes): the
    client sees the stream break, not end, and reconnects.
    """

    def __init__(self, stream: AsyncGenerator[str, None], headers: dict[str, str]) -> None:
        super().__init__(stream, headers=headers, media_type="text/event-stream")
        self.stream = stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        await send(start)
        finished = False
        async with anyio.create_task_group() as group:

            async def until_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(until_disconnect)
            finished = await self._send_all(send)
            group.cancel_scope.cancel()
        if finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_all(self, send: Send) -> bool:
        """Send every chunk; False when the client took too long for one (dropped)."""
        async with contextlib.aclosing(self.stream) as chunks:
            async for chunk in chunks:
                message = {"type": "http.response.body", "body": chunk.encode(), "more_body": True}
                with anyio.move_on_after(SEND_TIMEOUT) as sending:
                    await send(message)
                if sending.cancelled_caught:
                    return False
        return True
