"""Deliver every run event to observers and to async subscribers.

Observers are plain callables run synchronously, in registration order (the
run directory's ``events.jsonl`` writer and the CLI display are both observers).
Subscribers get an anyio memory object stream that ends when the run ends.

Every event is redacted once, here, before anyone sees it (the run's
:data:`attractor.redact.CURRENT`): ``events.jsonl``, the server's event stream,
the terminal and any subscriber see ``[redacted:NAME]`` in place of a secret.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from attractor import redact
from attractor.events import Event

Observer = Callable[[Event], None]


class EventBus:
    """Fan one event out to every observer and subscriber stream."""

    def __init__(self, observers: list[Observer] | None = None) -> None:
        self._observers: list[Observer] = list(observers or [])
        self._streams: list[MemoryObjectSendStream[Event]] = []
        #: Observer failures; an observer bug must not stop the run.
        self.errors: list[str] = []

    def add_observer(self, observer: Observer) -> None:
        self._observers.append(observer)

    def remove_observer(self, observer: Observer) -> None:
        if observer in self._observers:
            self._observers.remove(observer)

    def subscribe(self) -> MemoryObjectReceiveStream[Event]:
        """An async stream of every later event; it closes when :meth:`close` is called."""
        send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=math.inf)
        self._streams.append(send)
        return receive

    def emit(self, event: Event) -> None:
        event = redacted(event)
        for observer in self._observers:
            try:
                observer(event)
            except Exception as exc:  # a display or log bug must not kill the run
                self.errors.append(f"event observer {observer!r} failed: {exc}")
        if not self._streams:  # most runs: nobody subscribed
            return
        for stream in list(self._streams):
            try:
                stream.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._streams.remove(stream)

    def close(self) -> None:
        """End every subscriber stream."""
        for stream in self._streams:
            stream.close()
        self._streams.clear()


_FIELDS: dict[type[Event], tuple[str, ...]] = {}
_NOTHING_TO_REDACT = frozenset({int, float, bool, type(None)})


def redacted(event: Event) -> Event:
    """``event`` with the run's secrets taken out of its fields (itself when none held any)."""
    redactor = redact.current()
    if redactor is None:
        return event
    names = _FIELDS.get(type(event))
    if names is None:
        names = _FIELDS[type(event)] = tuple(f.name for f in dataclasses.fields(event) if f.init)
    changes: dict[str, Any] = {}
    for name in names:
        value = getattr(event, name)
        if type(value) in _NOTHING_TO_REDACT:
            continue
        clean: Any
        if type(value) is str:
            clean = redactor.text(value)
        elif isinstance(value, Event):  # a sub-pipeline's event inside a child_event
            clean = redacted(value)
        else:
            clean = redactor.value(value)
        if clean is not value:
            changes[name] = clean
    return dataclasses.replace(event, **changes) if changes else event
