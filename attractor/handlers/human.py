"""The wait.human handler: ask a person which outgoing edge to take.

The question shows what is being reviewed: the file named by ``human.show``
(relative to the working directory), else the last response of the stage before
the gate, at most :data:`REVIEW_CHARS` characters. The file must lie inside the
working directory or the pipeline's folder and be a regular file; otherwise the
gate fails with the reason (a file not written yet is shown as such). The question
also names the stage before the gate (``previous_stage``): a front end shows its
diff. An answer may carry a comment after the choice (``R: the tests are too
weak``); it goes into the context (``human.gate.comment``) and into the prompt
of the next LLM stage. An answer
that matches no choice is rejected and the question asked again (up to
:data:`MAX_ASKS` times); it does not use up one of the node's retries.
"""

from __future__ import annotations

import errno
import time
from pathlib import Path

import anyio

from attractor.dot.graph import Graph, Node
from attractor.errors import PipelinePathError, UsageError
from attractor.events import (
    InterviewCompleted,
    InterviewRejected,
    InterviewStarted,
    InterviewTimeout,
)
from attractor.fileio.confine import read_confined_text
from attractor.handlers.base import StageEnv
from attractor.handlers.context import (
    GATE_COMMENT_KEY,
    GATE_LABEL_KEY,
    GATE_NODE_KEY,
    GATE_SELECTED_KEY,
    Context,
)
from attractor.handlers.fidelity import ARRIVAL_KEY
from attractor.handlers.interviewer import (
    Answer,
    Option,
    Question,
    QuestionType,
    accelerator_key,
    match_option,
)
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.valueclass import frozen

REVIEW_CHARS = 4000
MAX_ASKS = 10


@frozen
class Choice:
    key: str
    label: str
    target: str


def choices_for(node: Node) -> list[Choice]:
    """One choice per outgoing edge: its label (else target id) and accelerator key."""
    result = []
    for edge in node.outgoing():
        label = edge.label or edge.target
        result.append(Choice(accelerator_key(label), label, edge.target))
    return result


class WaitForHumanHandler:
    """Presents the outgoing edges as choices and routes to the one picked."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        choices = choices_for(node)
        if not choices:
            return Outcome.fail(f"human gate {node.id} has no outgoing edges to choose from")
        review = await review_for(node, graph, context, env)
        question = _question(node, choices, review, previous_stage(context))
        env.emit(InterviewStarted(question=question.text, stage=node.id, review=question.review))
        for _ in range(MAX_ASKS):
            started = time.monotonic()
            answer = await env.services.interviewer.ask(question)
            elapsed = time.monotonic() - started
            if answer.is_timeout:
                env.emit(InterviewTimeout(question=question.text, stage=node.id, duration=elapsed))
                return _on_timeout(node, choices, question, elapsed, env)
            if answer.is_skipped:
                env.emit(_completed(question, answer, elapsed))
                return Outcome.fail(
                    f"human gate {node.id}: no answer given (answers file used up or input closed)"
                )
            found = parse_answer(answer, choices)
            if found is not None:
                env.emit(_completed(question, answer, elapsed, *found))
                return _chosen(node, *found)
            said = answer.text or answer.value
            env.emit(InterviewRejected(question=question.text, stage=node.id, answer=said))
            question = _again(question, said, choices)
        return Outcome.fail(f"human gate {node.id}: no valid answer after {MAX_ASKS} tries")


def gates_needing_a_person(graph: Graph) -> list[str]:
    """Human gates that cannot settle themselves: no default choice taken on a timeout."""
    return [
        node.id
        for node in graph.nodes()
        if node.handler_type == "wait.human"
        and not (default_choice(node) and question_timeout(node) is not None)
    ]


def check_auto_choice(graph: Graph, choice: str) -> None:
    """Refuse ``--auto-approve=CHOICE`` when no human gate of ``graph`` offers it.

    Raises:
        UsageError: naming the choices the gates do offer.
    """
    offered: list[str] = []
    for node in graph.nodes():
        if node.handler_type != "wait.human":
            continue
        options = [Option(c.key, c.label) for c in choices_for(node)]
        if match_option(choice, options) is not None:
            return
        offered += [o.label for o in options if o.label not in offered]
    known = ", ".join(repr(label) for label in offered) or "none (the pipeline has no gates)"
    raise UsageError(
        f"--auto-approve={choice}: no human gate offers that choice; the choices are {known}"
    )


async def review_for(node: Node, graph: Graph, context: Context, env: StageEnv) -> str:
    """What the question shows: ``human.show``'s file, else the previous response.

    The file is read in a worker thread, only if it lies inside the places a run
    may read and is a regular file (see :func:`~attractor.fileio.confine.read_confined_text`).

    Raises:
        PipelinePathError: ``human.show`` is refused; the gate fails with the reason.
    """
    shown = str(node.get("human.show") or "").strip()
    if shown:
        path = env.workdir(node, graph) / shown
        return f"{shown}:\n{await _head(path, env.read_roots(), node.id)}"
    previous = previous_stage(context)
    text = env.services.record.response(previous, REVIEW_CHARS) if previous else ""
    return f"response of {previous}:\n{text}" if text.strip() else ""


def previous_stage(context: Context) -> str:
    """The stage the run came from to reach the gate ("" when unknown)."""
    came = context.get(ARRIVAL_KEY)
    return str(came.get("from", "") or "") if isinstance(came, dict) else ""


async def _head(path: Path, roots: tuple[Path, ...], node: str) -> str:
    def read() -> str:
        return read_confined_text(
            path, roots, REVIEW_CHARS * 4, attribute="human.show", node=node, cut=True
        )

    try:
        text = await anyio.to_thread.run_sync(read)
    except PipelinePathError as error:
        if error.errno != errno.ENOENT:
            raise
        return "(cannot read it: no such file yet)"
    return text[:REVIEW_CHARS] + ("\n[... cut]" if len(text) > REVIEW_CHARS else "")


def default_choice(node: Node) -> str:
    """The gate's ``human.default_choice``, else the graph's (the default of every gate).

    A graph-wide default that a gate does not offer leaves that gate without one.
    """
    own = str(node.get("human.default_choice") or "")
    return own or str(node.graph.get("human.default_choice") or "")


def _question(node: Node, choices: list[Choice], review: str, previous: str = "") -> Question:
    options = tuple(Option(c.key, c.label) for c in choices)
    default_text = default_choice(node)
    default = None
    if default_text:
        picked = match_option(default_text, options) or _by_target(default_text, choices, options)
        if picked is not None:
            default = Answer(picked.key, selected_option=picked)
    return Question(
        text=node.label or "Select an option:",
        type=QuestionType.MULTIPLE_CHOICE,
        options=options,
        default=default,
        timeout_seconds=question_timeout(node),
        stage=node.id,
        review=review,
        previous_stage=previous,
    )


def _again(question: Question, said: str, choices: list[Choice]) -> Question:
    keys = ", ".join(c.key for c in choices)
    base = question.metadata.get("text", question.text)
    return Question(
        text=f"{said!r} is not one of the choices ({keys}). {base}",
        type=question.type,
        options=question.options,
        default=question.default,
        timeout_seconds=question.timeout_seconds,
        stage=question.stage,
        metadata={**question.metadata, "text": base},
        review="",
        previous_stage=question.previous_stage,
    )


def question_timeout(node: Node) -> float | None:
    """``human.timeout``, else the node's ``timeout``: how long the question waits.

    A gate's ``timeout`` is read as the question's, so that ``human.default_choice``
    applies when it expires instead of the node failing (see docs/engine.md).
    """
    if node.has("human.timeout"):
        value = node.get("human.timeout")
        return float(value) if value is not None else None
    return node.timeout


def _by_target(text: str, choices: list[Choice], options: tuple[Option, ...]) -> Option | None:
    for choice, option in zip(choices, options, strict=True):
        if choice.target == text:
            return option
    return None


def parse_answer(answer: Answer, choices: list[Choice]) -> tuple[Choice, str] | None:
    """The choice an answer names and its comment (``KEY: comment``), or None."""
    said = (answer.text or answer.value).strip()
    head, colon, comment = said.partition(":")
    if colon and comment.strip() and _find(Answer(said, text=said), choices) is None:
        picked = _find(Answer(head.strip(), text=head.strip()), choices)
        if picked is not None:
            return picked, comment.strip()
    whole = _find(answer, choices)
    return (whole, "") if whole is not None else None


def _find(answer: Answer, choices: list[Choice]) -> Choice | None:
    wanted = answer.selected_option
    for choice in choices:
        if wanted is not None and (choice.key, choice.label) == (wanted.key, wanted.label):
            return choice
    options = [Option(c.key, c.label) for c in choices]
    picked = match_option(answer.text or answer.value, options)
    if picked is None:
        by_target = {c.target: c for c in choices}
        return by_target.get((answer.text or answer.value).strip())
    return choices[options.index(picked)]


def _completed(
    question: Question,
    answer: Answer,
    elapsed: float,
    choice: Choice | None = None,
    comment: str = "",
) -> InterviewCompleted:
    """The event of an answer: which, who gave it, the comment given with it."""
    return InterviewCompleted(
        question=question.text,
        answer=choice.key if choice is not None else answer.value,
        duration=elapsed,
        answered_by=answer.answered_by,
        comment=comment,
        stage=question.stage,
        label=choice.label if choice is not None else "",
    )


def _on_timeout(
    node: Node, choices: list[Choice], question: Question, elapsed: float, env: StageEnv
) -> Outcome:
    default_text = default_choice(node)
    if default_text:
        choice = _find(Answer(default_text, text=default_text), choices)
        if choice is not None:
            taken = Answer(choice.key, text=choice.label, answered_by="timeout")
            env.emit(_completed(question, taken, elapsed, choice))
            return _chosen(node, choice, note="timed out; took human.default_choice")
    return Outcome(
        StageStatus.RETRY,
        failure_reason=f"human gate {node.id} timed out with no human.default_choice",
    )


def _chosen(node: Node, choice: Choice, comment: str = "", note: str = "") -> Outcome:
    notes = note or f"human chose {choice.label}"
    if comment:
        notes += f": {comment}"
    return Outcome(
        StageStatus.SUCCESS,
        preferred_label=choice.label,
        suggested_next_ids=(choice.target,),
        context_updates={
            GATE_SELECTED_KEY: choice.key,
            GATE_LABEL_KEY: choice.label,
            GATE_COMMENT_KEY: comment,
            GATE_NODE_KEY: node.id,
        },
        notes=notes,
    )
