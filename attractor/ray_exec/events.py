"""A run's events and questions, between the Ray tasks that run it and the driver.

One small actor per driver process (:class:`_EventHub`, no CPU, placed on the
driver's node) keeps, under a key per run, the events the run's task sent and
the questions its human gates asked, until the driver takes them; and the
driver's answers until the task takes them. A branch task sends its events under
a key of its own to its run task, which relays them into the run's event log
(and so on to the driver) while the branch runs.

A task keeps its events in a :class:`Batcher` and sends what it holds in one call
every :data:`BATCH_SECONDS` (so a watcher sees a long task's progress); the events
still held when the task ends go back with its result, and whoever waited for the
result (the driver, the run task) emits them after it drained the hub. A task
that ends sooner than one batch never calls the hub at all: a worker's first call
to an actor, and the calls of one event each, cost more than a short branch. An
actor runs one caller's calls in the order they were sent, so
:meth:`Outbox.flush` returning means every batch sent before it is in the hub:
a task that sent any flushes before it returns the rest, and a task that fails
sends the rest and flushes.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from typing import Any

import anyio
import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from attractor.engine.seam import EventBus
from attractor.events import Event
from attractor.handlers.interviewer import Answer, Interviewer, Question
from attractor.valueclass import frozen

#: How often the driver takes what arrived, and a gate looks for its answer.
_POLL = 0.1
#: How often a task sends the events it holds.
BATCH_SECONDS = 0.2

#: A question for the driver: ("ask", id, question) or ("withdraw", id, None).
Ask = tuple[str, str, Question | None]


@ray.remote(num_cpus=0)
class _EventHub:
    def __init__(self) -> None:
        self.waiting: dict[str, list[Event]] = {}
        self.asks: dict[str, list[Ask]] = {}
        self.answers: dict[tuple[str, str], Answer] = {}

    def put_many(self, key: str, events: list[Event]) -> None:
        self.waiting.setdefault(key, []).extend(events)

    def take(self, key: str) -> tuple[list[Event], list[Ask]]:
        return self.waiting.pop(key, []), self.asks.pop(key, [])

    def ask(self, key: str, ask: Ask) -> None:
        self.asks.setdefault(key, []).append(ask)

    def answer(self, key: str, question_id: str, answer: Answer) -> None:
        self.answers[(key, question_id)] = answer

    def answer_of(self, key: str, question_id: str) -> Answer | None:
        return self.answers.pop((key, question_id), None)

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
        here = NodeAffinitySchedulingStrategy(context.get_node_id(), soft=False)
        _HUBS[job] = _EventHub.options(scheduling_strategy=here).remote()  # type: ignore[attr-defined]
    return _HUBS[job]


@frozen
class Outbox:
    """Where a task's events go: the hub, under ``key`` (a :class:`Batcher` sends them)."""

    hub: Any
    key: str
    #: The driver's cluster node, where the hub lives (set by the driver).
    node: str = ""

    def flush(self) -> None:
        # The events are for the driver's display; the run's record is on disk.
        with contextlib.suppress(RayError):
            ray.get(self.hub.flush.remote())

    def sub(self, name: str) -> Outbox:
        """A box of its own for a part of the run (a branch task) under this one."""
        return Outbox(self.hub, f"{self.key}/{name}/{secrets.token_hex(4)}", self.node)


class Batcher:
    """A task's events, held and sent to its :class:`Outbox` in batches (see the module doc).

    An observer of the task's event bus. Run :meth:`send_every` beside the task's
    work; when the work is done, :meth:`rest` gives the events to return with the
    result, or, when it failed, :meth:`send_rest` sends them.
    """

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.held: list[Event] = []
        self.sent = False

    def __call__(self, event: Event) -> None:
        self.held.append(event)

    def send(self) -> None:
        """Send the events held, in one call, without waiting."""
        if self.held:
            batch, self.held = self.held, []
            self.outbox.hub.put_many.remote(self.outbox.key, batch)
            self.sent = True

    async def send_every(self, seconds: float = BATCH_SECONDS) -> None:
        """Send what arrived every ``seconds`` (until cancelled)."""
        while True:
            await anyio.sleep(seconds)
            self.send()

    def rest(self) -> list[Event]:
        """The events not sent, once every batch sent is in the hub (to return)."""
        if self.sent:
            self.outbox.flush()
        rest, self.held = self.held, []
        return rest

    def send_rest(self) -> None:
        """Send the events not sent and wait until the hub has every one (a failed task)."""
        self.send()
        if self.sent:
            self.outbox.flush()


def emit_all(bus: EventBus, events: list[Event]) -> None:
    """Emit the events a task returned (after :func:`drain` took those it sent)."""
    for event in events:
        bus.emit(event)


@frozen
class RemoteInterviewer:
    """A task's human gates, answered by the driver's interviewer (console, web page, file).

    The question waits in the hub until the driver takes it; the task then looks
    for the answer every tenth of a second. A gate that stops waiting (its
    timeout, the run stopping) withdraws the question.
    """

    outbox: Outbox

    async def ask(self, question: Question) -> Answer:
        hub, key = self.outbox.hub, self.outbox.key
        question_id = secrets.token_hex(6)
        hub.ask.remote(key, ("ask", question_id, question))
        try:
            while True:
                answer = ray.get(hub.answer_of.remote(key, question_id))
                if answer is not None:
                    return answer  # type: ignore[no-any-return]
                await anyio.sleep(_POLL)
        except BaseException:
            with contextlib.suppress(RayError):
                hub.ask.remote(key, ("withdraw", question_id, None))
            raise


class _Desk:
    """The driver's side of the gates: each question asked of the real interviewer."""

    def __init__(self, outbox: Outbox, interviewer: Interviewer, group: Any) -> None:
        self.outbox, self.interviewer, self.group = outbox, interviewer, group
        self.open: dict[str, anyio.CancelScope] = {}

    def handle(self, ask: Ask) -> None:
        kind, question_id, question = ask
        if kind == "withdraw":
            scope = self.open.pop(question_id, None)
            if scope is not None:
                scope.cancel()
        elif question is not None:
            self.open[question_id] = scope = anyio.CancelScope()
            self.group.start_soon(self._answer, question_id, question, scope)

    async def _answer(self, question_id: str, question: Question, scope: anyio.CancelScope) -> None:
        with scope:
            answer = await self.interviewer.ask(question)
            self.outbox.hub.answer.remote(self.outbox.key, question_id, answer)
        self.open.pop(question_id, None)


#: How many relays run in this process. Together they ask the hub at most about
#: _CALLS_PER_SECOND times a second: a run task with a hundred branches must not
#: spend its time asking for events.
_RELAYS = [0]
_CALLS_PER_SECOND = 50


async def relay(outbox: Outbox, bus: EventBus, interviewer: Interviewer | None = None) -> None:
    """Emit the events that arrive on ``bus`` and answer the questions (until cancelled)."""
    _RELAYS[0] += 1
    try:
        async with anyio.create_task_group() as group:
            desk = _Desk(outbox, interviewer, group) if interviewer is not None else None
            while True:
                drain(outbox, bus, desk.handle if desk is not None else None)
                await anyio.sleep(max(_POLL, _RELAYS[0] / _CALLS_PER_SECOND))
    finally:
        _RELAYS[0] -= 1


def drain(outbox: Outbox, bus: EventBus, on_ask: Callable[[Ask], None] | None = None) -> None:
    """Emit the events that arrived since the last call (none if the hub is gone)."""
    try:
        events, asks = ray.get(outbox.hub.take.remote(outbox.key))
    except RayError:
        return
    emit_all(bus, events)
    if on_ask is not None:
        for ask in asks:
            on_ask(ask)
