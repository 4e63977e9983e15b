"""Typed, JSON-serialisable events emitted while a pipeline runs.

Every observer (the CLI display, the run directory's ``events.jsonl``, a future
HTTP server) receives the same event objects. ``event.to_json()`` gives
``{"type": ..., "ts": ..., **fields}``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import field
from typing import Any, ClassVar

from attractor.valueclass import frozen


@frozen(kw_only=True)
class Event:
    """Base of every event. ``type`` is the stable name used in JSON."""

    type: ClassVar[str] = "event"
    ts: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type}
        for name in _names(self):
            value = getattr(self, name)
            data[name] = value if type(value) in _PLAIN else _jsonable(value)
        return data


_FIELD_NAMES: dict[type[Event], tuple[str, ...]] = {}


def _names(event: Event) -> tuple[str, ...]:
    """The names of ``event``'s fields, in order (``dataclasses.fields`` per event
    costs more than the rest of encoding it)."""
    names = _FIELD_NAMES.get(type(event))
    if names is None:
        names = _FIELD_NAMES[type(event)] = tuple(f.name for f in dataclasses.fields(event))
    return names


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    return str(value)


# -- pipeline lifecycle ---------------------------------------------------------


@frozen(kw_only=True)
class PipelineStarted(Event):
    """A run began, or a resumed run took up where it stopped."""

    type: ClassVar[str] = "pipeline_started"
    name: str
    run_id: str
    run_dir: str
    resumed: bool = False
    #: A resume that continues a finished run: ``retry_failed:NODE`` or ``from:NODE``.
    continuation: str = ""


@frozen(kw_only=True)
class PipelineCompleted(Event):
    """The run reached its exit node."""

    type: ClassVar[str] = "pipeline_completed"
    duration: float
    artifact_count: int = 0


@frozen(kw_only=True)
class PipelineFailed(Event):
    """The run ended failed; ``error`` says why."""

    type: ClassVar[str] = "pipeline_failed"
    error: str
    duration: float


@frozen(kw_only=True)
class PipelineTimedOut(Event):
    """The run's ``--timeout`` ran out; ``node`` is the stage it stopped."""

    type: ClassVar[str] = "pipeline_timed_out"
    timeout: float
    node: str | None
    duration: float


@frozen(kw_only=True)
class PipelineInterrupted(Event):
    """A stop signal (Ctrl-C, SIGTERM, SIGHUP) ended the run."""

    type: ClassVar[str] = "pipeline_interrupted"
    signal: str
    node: str | None
    duration: float


# -- stages ---------------------------------------------------------------------


@frozen(kw_only=True)
class StageStarted(Event):
    """One attempt of a node began."""

    type: ClassVar[str] = "stage_started"
    name: str
    index: int
    handler: str = ""
    attempt: int = 1
    #: Which visit of the node (1 for the first): its files end up in ``NODE/vVISIT-aATTEMPT``
    #: once a later attempt starts, and stay in ``NODE/`` while they are the latest.
    visit: int = 1


@frozen(kw_only=True)
class StageCompleted(Event):
    """One attempt of a node ended with an outcome other than a failure (``status``)."""

    type: ClassVar[str] = "stage_completed"
    name: str
    index: int
    duration: float
    status: str = "success"
    notes: str = ""
    #: The outgoing edge label the stage chose (a model's report or a status file).
    preferred_label: str = ""


@frozen(kw_only=True)
class StageFailed(Event):
    """One attempt of a node failed; ``will_retry`` says whether another one follows."""

    type: ClassVar[str] = "stage_failed"
    name: str
    index: int
    error: str
    will_retry: bool


@frozen(kw_only=True)
class StageRetrying(Event):
    """A failed attempt is tried again after ``delay`` seconds."""

    type: ClassVar[str] = "stage_retrying"
    name: str
    index: int
    attempt: int
    delay: float


@frozen(kw_only=True)
class StageOutput(Event):
    """Whole lines a running step's command wrote, batched while it runs.

    ``offset`` is where ``text`` starts in the step's ``stdout.txt`` or
    ``stderr.txt`` (as the command wrote it), so a reader can link to the whole
    file. ANSI escapes are kept as written. A batch holds at most 64 KiB: when
    more arrived, the last lines are kept, ``skipped`` says how many bytes
    before ``offset`` were left out, and ``text`` starts with one note line
    saying so (not part of the file).
    """

    type: ClassVar[str] = "stage_output"
    node: str
    visit: int
    stream: str  # stdout | stderr
    text: str
    offset: int
    skipped: int = 0
    attempt: int = 1


# -- parallel -------------------------------------------------------------------


@frozen(kw_only=True)
class ParallelStarted(Event):
    """A parallel node is starting its branches."""

    type: ClassVar[str] = "parallel_started"
    node: str
    branch_count: int


@frozen(kw_only=True)
class ParallelBranchStarted(Event):
    """One branch of a parallel node began."""

    type: ClassVar[str] = "parallel_branch_started"
    node: str
    branch: str
    index: int


@frozen(kw_only=True)
class ParallelBranchCompleted(Event):
    """One branch of a parallel node ended."""

    type: ClassVar[str] = "parallel_branch_completed"
    node: str
    branch: str
    index: int
    duration: float
    success: bool


@frozen(kw_only=True)
class ParallelCompleted(Event):
    """Every branch of a parallel node ended."""

    type: ClassVar[str] = "parallel_completed"
    node: str
    duration: float
    success_count: int
    failure_count: int


@frozen(kw_only=True)
class ManagerCycle(Event):
    """One observe/steer/wait cycle of a manager node over its child pipeline."""

    type: ClassVar[str] = "manager_cycle"
    node: str
    cycle: int
    child_status: str
    child_node: str
    completed_nodes: int


# -- human interaction ----------------------------------------------------------


@frozen(kw_only=True)
class InterviewStarted(Event):
    """A human gate asked its question."""

    type: ClassVar[str] = "interview_started"
    question: str
    stage: str
    #: What the person is asked to review (bounded), "" when nothing is shown.
    review: str = ""


@frozen(kw_only=True)
class InterviewCompleted(Event):
    """A question answered: the answer, who gave it and the comment given with it."""

    type: ClassVar[str] = "interview_completed"
    question: str
    answer: str
    duration: float
    #: cli, answers_file, auto, timeout (the gate's default), page, api, callback ("" unknown).
    answered_by: str = ""
    comment: str = ""
    #: The gate's node id.
    stage: str = ""
    #: The label of the choice taken ("" when the answer named none).
    label: str = ""


@frozen(kw_only=True)
class InterviewTimeout(Event):
    """A human gate's question went unanswered for its whole timeout."""

    type: ClassVar[str] = "interview_timeout"
    question: str
    stage: str
    duration: float


@frozen(kw_only=True)
class InterviewRejected(Event):
    """An answer that matched no choice; the question is asked again."""

    type: ClassVar[str] = "interview_rejected"
    question: str
    stage: str
    answer: str


# -- checkpoints ----------------------------------------------------------------


@frozen(kw_only=True)
class CheckpointSaved(Event):
    """The run's state was saved before or after a node (``phase``)."""

    type: ClassVar[str] = "checkpoint_saved"
    node_id: str | None
    phase: str = "after"


# -- agent loop (emitted by codergen nodes that run the coding agent) -----------


@frozen(kw_only=True)
class TurnBudgetResolved(Event):
    """The turn budget of one node attempt and where each part came from."""

    type: ClassVar[str] = "turn_budget_resolved"
    node: str
    budget: dict[str, Any]


@frozen(kw_only=True)
class AgentTurnStarted(Event):
    """The coding agent of a node began a turn."""

    type: ClassVar[str] = "agent_turn_started"
    node: str
    turn: int
    max_turns: int
    kind: str  # work | reflection | final


@frozen(kw_only=True)
class AgentTurnCompleted(Event):
    """The coding agent of a node ended a turn."""

    type: ClassVar[str] = "agent_turn_completed"
    node: str
    turn: int
    kind: str
    tool_calls: int
    input_tokens: int = 0
    output_tokens: int = 0
    #: Of ``input_tokens``, how many were read from or written to the prompt cache.
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: This request's cost in US dollars; None when no price is known for the model.
    cost: float | None = None


@frozen(kw_only=True)
class ToolCallStarted(Event):
    """A tool call about to run, so a display can show the call in progress."""

    type: ClassVar[str] = "tool_call_started"
    node: str
    turn: int
    tool: str
    #: A one-line summary of the arguments (the command, the path...), at most 200 chars.
    summary: str = ""


@frozen(kw_only=True)
class ToolCallCompleted(Event):
    """One tool call; ``output`` is the full, untruncated output."""

    type: ClassVar[str] = "tool_call_completed"
    node: str
    turn: int
    tool: str
    arguments: dict[str, Any]
    output: str
    is_error: bool
    duration: float


@frozen(kw_only=True)
class AgentReflection(Event):
    """What the agent wrote on a forced reflection turn."""

    type: ClassVar[str] = "agent_reflection"
    node: str
    turn: int
    text: str


@frozen(kw_only=True)
class AgentWarning(Event):
    """Loop detection, a stubborn final turn, a run budget running out..."""

    type: ClassVar[str] = "agent_warning"
    node: str
    turn: int
    message: str


@frozen(kw_only=True)
class TurnLimitReached(Event):
    """A node's agent used its turns: ``reason`` says which limit held."""

    type: ClassVar[str] = "turn_limit_reached"
    node: str
    turns_used: int
    limit: int
    reason: str


@frozen(kw_only=True)
class DebugNote(Event):
    """A side note from a model adapter or an agent, not a step of the run."""

    type: ClassVar[str] = "debug"
    node: str | None
    message: str


#: Argument names that say best what a tool call does, most telling first.
_SUMMARY_KEYS = ("command", "path", "file_path", "pattern", "query", "url")


def call_summary(arguments: dict[str, Any], limit: int = 200) -> str:
    """One line saying what a tool call does: its telling argument, else all of them."""
    for key in _SUMMARY_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            text = value
            break
    else:
        text = " ".join(f"{k}={v}" for k, v in arguments.items())
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- sub-pipelines ------------------------------------------------------------------

#: The events of a sub-pipeline's child run its parent passes on to its own
#: followers (the display, ``attractor logs``): the steps, not the run's bookkeeping.
CHILD_EVENTS = frozenset(
    {
        "stage_started",
        "stage_completed",
        "stage_failed",
        "stage_retrying",
        "stage_output",
        "agent_turn_started",
        "agent_turn_completed",
        "tool_call_started",
        "tool_call_completed",
        "agent_reflection",
        "agent_warning",
        "turn_limit_reached",
        "interview_started",
        "interview_completed",
        "interview_timeout",
        "parallel_started",
        "parallel_branch_completed",
        "parallel_completed",
        "child_event",
    }
)
#: The fields of those events that name a node of the child's pipeline.
_NODE_FIELDS = ("name", "node", "stage")


@frozen(kw_only=True)
class ChildEvent(Event):
    """An event of a sub-pipeline's child run, passed on by the parent run.

    ``node`` is the parent's sub-pipeline node, ``child_dir`` the child run's
    directory relative to the parent's, ``event`` the child's event as its own
    ``events.jsonl`` holds it (a grandchild's comes as a ``child_event`` in it).
    """

    type: ClassVar[str] = "child_event"
    node: str
    child_dir: str
    event: Event

    def as_parent(self) -> Event:
        """The child's event as the parent shows it: its node names ``NODE/CHILD``."""
        inner = self.event.as_parent() if isinstance(self.event, ChildEvent) else self.event
        renamed = {
            name: f"{self.node}/{value}"
            for name in _NODE_FIELDS
            if isinstance(value := getattr(inner, name, None), str)
        }
        return dataclasses.replace(inner, **renamed)  # type: ignore[arg-type]


def shown(event: Event) -> Event:
    """``event`` as a display shows it: a child run's event as :meth:`ChildEvent.as_parent`."""
    return event.as_parent() if isinstance(event, ChildEvent) else event
