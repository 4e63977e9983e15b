"""Human gates answered over HTTP: an interviewer whose questions wait for a POST."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

import anyio

from attractor.dot.accelerators import strip_accelerator
from attractor.errors import AttractorError, UsageError
from attractor.launch import (
    Answer,
    AnswerValue,
    Question,
    QuestionType,
    match_option,
)
from attractor.valueclass import mutable
from attractor.workspace.diff import diff_range

_YES = ("y", "yes", "true", "1")
#: The longest stage diff the page gets (characters); a longer one is cut.
MAX_DIFF = 512 * 1024


@mutable
class Pending:
    """A question waiting for its answer."""

    id: str
    question: Question
    asked_at: float = field(default_factory=time.time)
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer | None = None
    comment: str = ""
    #: The changes of the stage before the gate (:func:`read_changes`); None until read
    #: or when that stage changed nothing (or the run keeps no checkpoints).
    changes: dict[str, Any] | None = None
    changes_read: bool = False

    def to_json(self) -> dict[str, Any]:
        q = self.question
        default = q.default.value if q.default is not None else None
        return {
            "id": self.id,
            "stage": q.stage,
            "text": q.text,
            "type": str(q.type),
            "options": [{"key": o.key, "label": strip_accelerator(o.label)} for o in q.options],
            "default": default,
            "timeout_seconds": q.timeout_seconds,
            "asked_at": self.asked_at,
            # When the default is taken (or the gate times out), None without a timeout.
            "deadline": self.asked_at + q.timeout_seconds if q.timeout_seconds else None,
            # What the person is asked to decide on: the previous stage's response
            # or the file named by human.show.
            "review": q.review,
            # The stage before the gate and its diff: {"node", "diff", "stat", "truncated"}.
            "diff": self.changes,
        }


async def stage_diff(run_dir: Path, node: str) -> dict[str, Any]:
    """What stage ``node`` of the run in ``run_dir`` changed: ``{"node", "diff", "stat",
    "truncated"}``, the diff cut at :data:`MAX_DIFF` (git asked for the ``--stat`` only
    when the diff holds something).

    Raises:
        UsageError: the run has no workspace, or no checkpoint of the stage.
    """
    found = await diff_range(run_dir, node)  # the manifest and status read once
    diff = await found.diff()
    stat = await found.diff(stat=True) if diff else ""
    return {"node": node, "diff": diff[:MAX_DIFF], "stat": stat, "truncated": len(diff) > MAX_DIFF}


async def stage_changes(run_dir: Path, node: str) -> dict[str, Any] | None:
    """:func:`stage_diff`, or None when the stage changed nothing or it cannot be read."""
    try:
        changes = await stage_diff(run_dir, node)
    except (AttractorError, OSError):
        return None  # no workspace, no checkpoint of it, or git cannot read it
    return changes if changes["diff"].strip() else None


async def read_changes(run_dir: Path, pending: Pending) -> None:
    """Fill ``pending.changes`` with the diff of the stage before the gate, once per question
    (the stage is over: its checkpoint no longer moves)."""
    if pending.changes_read:
        return
    previous = pending.question.previous_stage
    pending.changes = await stage_changes(run_dir, previous) if previous else None
    pending.changes_read = True


class WebInterviewer:
    """Keeps each question pending until :meth:`answer` is called or it times out.

    ``on_answer(pending)`` runs when an answer arrives (the server records the
    comment in the run directory).
    """

    def __init__(self, on_answer: Callable[[Pending], None] | None = None) -> None:
        self.pending: dict[str, Pending] = {}
        self._asked = 0
        self._on_answer = on_answer

    async def ask(self, question: Question) -> Answer:
        self._asked += 1
        waiting = Pending(f"q{self._asked}", question)
        self.pending[waiting.id] = waiting
        try:
            with anyio.move_on_after(question.timeout_seconds):
                await waiting.answered.wait()
        finally:
            self.pending.pop(waiting.id, None)
        if waiting.answer is not None:
            return waiting.answer
        return (question.default or Answer(AnswerValue.TIMEOUT)).by("timeout")

    def answer(self, qid: str, text: str, comment: str = "", answered_by: str = "api") -> Answer:
        """Answer question ``qid`` with a key or label (yes/no, or free text).

        ``answered_by`` says who answered (``page`` for the web page, ``api``
        for any other HTTP client), for the run's event log.

        Raises:
            KeyError: no such question is waiting.
            UsageError: the text matches none of the choices.
        """
        waiting = self.pending[qid]
        answer = parse_answer(waiting.question, text)
        if comment.strip() and answer.selected_option is not None:
            # The gate reads a comment after the choice, as typed on a terminal.
            said = f"{answer.selected_option.key}: {comment.strip()}"
            answer = Answer(answer.value, selected_option=answer.selected_option, text=said)
        answer = answer.by(answered_by)
        waiting.answer, waiting.comment = answer, comment
        self.pending.pop(qid, None)
        if self._on_answer is not None:
            self._on_answer(waiting)
        waiting.answered.set()
        return answer


def parse_answer(question: Question, text: str) -> Answer:
    """``text`` as an answer to ``question``; a choice must match one option."""
    text = text.strip()
    if question.type in (QuestionType.YES_NO, QuestionType.CONFIRMATION):
        value = AnswerValue.YES if text.lower() in _YES else AnswerValue.NO
        return Answer(value, text=text)
    if question.type == QuestionType.FREEFORM:
        return Answer(text, text=text)
    option = match_option(text, question.options)
    if option is None:
        keys = ", ".join(f"{o.key} ({strip_accelerator(o.label)})" for o in question.options)
        raise UsageError(f"answer {text!r} matches no choice; answer one of: {keys}")
    return Answer(option.key, selected_option=option, text=option.label)
