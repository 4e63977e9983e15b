"""The notifier: an observer of a run's events that delivers its notifications in the background.

The observer only queues (the event bus calls it synchronously, and the run
must not wait on a webhook); one task sends the queue in order. When the run
ends, :meth:`Notifier.drain` sends what is left for at most the time one
notification may take (:func:`bound`); what is still unsent then is dropped
with a warning. Every delivery, sent or not, is a line of the run directory's
``notifications.jsonl``; every one that failed is also a warning.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import urlsplit

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from attractor.events import Event
from attractor.fileio.writes import append_text
from attractor.notify.deliver import BACKOFF, Delivery, deliver, headers_for
from attractor.notify.payload import Notice, Notices

#: The run directory's record of every delivery.
RECORD = "notifications.jsonl"
#: Notifications waiting at most; beyond it, new ones are dropped (with a warning).
QUEUE = 100


def bound(timeout: float) -> float:
    """The longest one notification may take: every attempt timing out, and the pauses."""
    return (len(BACKOFF) + 1) * timeout + sum(BACKOFF)


class Notifier:
    """Notifies ``url`` of the run's events named in ``chosen``; an async context manager.

    ``link(run_id)`` gives the address of the run's page when a server runs it.
    """

    def __init__(
        self,
        url: str,
        *,
        chosen: tuple[str, ...],
        fmt: str = "json",
        secret: bytes | None = None,
        timeout: float = 5.0,
        link: Callable[[str], str] | None = None,
    ) -> None:
        self.url = url
        self.fmt = fmt
        self.timeout = timeout
        self.warnings: list[str] = []
        self._secret = secret
        self._notices = Notices(chosen, link)
        self._send: MemoryObjectSendStream[Notice] | None = None
        self._receive: MemoryObjectReceiveStream[Notice] | None = None
        self._done = anyio.Event()
        self._group: TaskGroup | None = None
        self._sending: Notice | None = None

    @property
    def where(self) -> str:
        """The webhook as messages name it: scheme and host only (its path may be a token)."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"

    def __call__(self, event: Event) -> None:
        """Queue the notifications ``event`` makes; never blocks."""
        for notice in self._notices.of(event):
            if self._send is None:
                self._warn(notice, "not sent: the notifier is not running")
                continue
            try:
                self._send.send_nowait(notice)
            except anyio.WouldBlock:
                self._warn(notice, f"not sent: {QUEUE} notifications were already waiting")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._warn(notice, "not sent: it came after the run ended")

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Notifier]:
        """Deliver in the background while the block runs; then drain (bounded, shielded).

        The task group only holds the delivery task, which never raises: an error
        of the block comes out of it alone, as itself (not in an exception group).
        """
        self._send, self._receive = anyio.create_memory_object_stream[Notice](QUEUE)
        try:
            async with self._send, self._receive, anyio.create_task_group() as group:
                self._group = group
                group.start_soon(self._worker, self._receive)
                try:
                    yield self
                finally:
                    with anyio.CancelScope(shield=True):
                        await self.drain()
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as errors:
            if len(errors.exceptions) != 1:
                raise
            raise errors.exceptions[0] from None
        finally:
            self._group = self._send = self._receive = None

    async def drain(self) -> None:
        """Send what is queued, for at most :func:`bound` seconds; drop the rest with a warning."""
        if self._done.is_set() or self._group is None or self._send is None:
            return
        self._send.close()
        with anyio.move_on_after(bound(self.timeout)):
            await self._done.wait()
        if self._done.is_set():
            return
        self._group.cancel_scope.cancel()
        late = f"not sent: the run ended and {bound(self.timeout):g}s went by"
        if self._sending is not None:
            self._warn(self._sending, late)
        while self._receive is not None:
            try:
                self._warn(self._receive.receive_nowait(), late)
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
        self._done.set()

    async def _worker(self, queue: MemoryObjectReceiveStream[Notice]) -> None:
        try:
            async for notice in queue:
                self._sending = notice
                await self._one(notice)
                self._sending = None
        finally:
            self._done.set()

    async def _one(self, notice: Notice) -> None:
        body = notice.body(self.fmt)
        delivery_id = str(notice.payload.get("delivery", ""))
        headers = headers_for(notice.event, delivery_id, body, self._secret)
        try:
            outcome = await deliver(self.url, body, headers, self.timeout)
        except Exception as exc:  # a bug here must not stop the run
            outcome = Delivery(False, 1, None, f"{type(exc).__name__}: {exc}")
        self._record(notice, outcome)
        if not outcome.delivered:
            tries = f"{outcome.attempts} attempt{'s' if outcome.attempts > 1 else ''}"
            self._warn(notice, f"not delivered after {tries}: {outcome.error or 'no answer'}")

    def _record(self, notice: Notice, outcome: Delivery) -> None:
        run_dir = str(notice.payload.get("run_dir") or "")
        if not run_dir:
            return
        line = {
            "time": time.time(),
            "event": notice.event,
            "delivery": notice.payload.get("delivery"),
            "to": self.where,
            "delivered": outcome.delivered,
            "attempts": outcome.attempts,
            "status": outcome.status,
            "error": outcome.error,
        }
        try:
            append_text(Path(run_dir) / RECORD, json.dumps(line) + "\n")
        except OSError as exc:
            self.warnings.append(f"cannot record a notification in {run_dir}: {exc.strerror}")

    def _warn(self, notice: Notice, what: str) -> None:
        self.warnings.append(f"notification {notice.event} to {self.where} {what}")
