"""A run's events, from the Ray worker that runs it to the driver's observers.

One small actor per driver process (:class:`_EventHub`, no CPU) holds the
events of each of its runs under the run's key until the driver takes them.
The worker sends each event without waiting; an actor runs one caller's calls
in the order they were sent, so :meth:`Outbox.flush` returning means every
event sent before it is in the hub.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import anyio
import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from attractor.engine.eventbus import EventBus
from attractor.events import Event

#: How often the driver takes the events that arrived.
_POLL = 0.1


@ray.remote(num_cpus=0)
class _EventHub:
    def __init__(self) -> None:
        self.waiting: dict[str, list[Event]] = {}

    def put(self, key: str, event: Event) -> None:
        self.waiting.setdefault(key, []).append(event)

    def take(self, key: str) -> list[Event]:
        return self.waiting.pop(key, [])

    def flush(self) -> None:
        return None


#: The hub of each connection of this process to a cluster (by Ray job id).
_HUBS: dict[str, Any] = {}


def event_hub() -> Any:
    """This driver's hub (started on first use; the cluster ends it with the driver)."""
    context = ray.get_runtime_context()
    job = context.get_job_id()
    if job not in _HUBS:
        # On the driver's own node: losing another node must not lose the events.
        here = NodeAffinitySchedulingStrategy(context.get_node_id(), soft=True)
        _HUBS[job] = _EventHub.options(scheduling_strategy=here).remote()  # type: ignore[attr-defined]
    return _HUBS[job]


@dataclass(frozen=True)
class Outbox:
    """The worker's end: an observer that sends each event to the hub under ``key``."""

    hub: Any
    key: str

    def __call__(self, event: Event) -> None:
        self.hub.put.remote(self.key, event)

    def flush(self) -> None:
        # The events are for the driver's display; the run's record is on disk.
        with contextlib.suppress(RayError):
            ray.get(self.hub.flush.remote())


async def relay(outbox: Outbox, bus: EventBus) -> None:
    """Emit the run's events on this side's bus as they arrive (until cancelled)."""
    while True:
        drain(outbox, bus)
        await anyio.sleep(_POLL)


def drain(outbox: Outbox, bus: EventBus) -> None:
    """Emit the events that arrived since the last call (none if the hub is gone)."""
    try:
        events = ray.get(outbox.hub.take.remote(outbox.key))
    except RayError:
        return
    for event in events:
        bus.emit(event)
