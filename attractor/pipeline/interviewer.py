"""Human-in-the-loop: questions, answers and the frontends that answer them.

Built in: :class:`AutoApproveInterviewer` (``--auto-approve``),
:class:`QueueInterviewer` (``--answers FILE``, one answer per line),
:class:`ConsoleInterviewer` (stdin), :class:`CallbackInterviewer` and
:class:`RecordingInterviewer`.
"""

from __future__ import annotations

import enum
import re
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import anyio
import anyio.to_thread

from attractor.errors import UsageError


class QuestionType(enum.StrEnum):
    YES_NO = "yes_no"
    MULTIPLE_CHOICE = "multiple_choice"
    FREEFORM = "freeform"
    CONFIRMATION = "confirmation"


class AnswerValue(enum.StrEnum):
    YES = "yes"
    NO = "no"
    SKIPPED = "skipped"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Option:
    key: str
    label: str


@dataclass(frozen=True)
class Answer:
    """``value`` is an option key, an :class:`AnswerValue` or free text."""

    value: str
    selected_option: Option | None = None
    text: str = ""

    @property
    def is_timeout(self) -> bool:
        return self.value == AnswerValue.TIMEOUT

    @property
    def is_skipped(self) -> bool:
        return self.value == AnswerValue.SKIPPED


@dataclass(frozen=True)
class Question:
    text: str
    type: QuestionType = QuestionType.MULTIPLE_CHOICE
    options: tuple[Option, ...] = ()
    default: Answer | None = None
    timeout_seconds: float | None = None
    stage: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


class Interviewer(Protocol):
    """Anything that can answer a question (possibly after a while)."""

    async def ask(self, question: Question) -> Answer: ...


_ACCELERATOR = (
    re.compile(r"^\s*\[(\w)\]\s*(.*)$"),
    re.compile(r"^\s*(\w)\)\s*(.*)$"),
    re.compile(r"^\s*(\w)\s+-\s+(.*)$"),
)


def accelerator_key(label: str) -> str:
    """The shortcut key of ``[K] Label``, ``K) Label``, ``K - Label``, else the first character."""
    for pattern in _ACCELERATOR:
        match = pattern.match(label)
        if match:
            return match.group(1).upper()
    stripped = label.strip()
    return stripped[:1].upper()


def strip_accelerator(label: str) -> str:
    """``label`` without its accelerator prefix."""
    for pattern in _ACCELERATOR:
        match = pattern.match(label)
        if match:
            return match.group(2).strip()
    return label.strip()


def match_option(response: str, options: Iterable[Option]) -> Option | None:
    """The option whose key or label (with or without accelerator) matches ``response``."""
    text = response.strip().lower()
    if not text:
        return None
    opts = list(options)
    for option in opts:
        if text == option.key.lower():
            return option
    for option in opts:
        if text in (option.label.strip().lower(), strip_accelerator(option.label).lower()):
            return option
    return None


class AutoApproveInterviewer:
    """YES to yes/no questions, the first option of a choice, else ``auto-approved``."""

    async def ask(self, question: Question) -> Answer:
        if question.type in (QuestionType.YES_NO, QuestionType.CONFIRMATION):
            return Answer(AnswerValue.YES)
        if question.options:
            first = question.options[0]
            return Answer(first.key, selected_option=first)
        return Answer("auto-approved", text="auto-approved")


class QueueInterviewer:
    """Answers from a list, in order; SKIPPED once the list is used up."""

    def __init__(self, answers: Iterable[str]) -> None:
        self._answers: deque[str] = deque(answers)

    @classmethod
    def from_file(cls, path: Path) -> QueueInterviewer:
        """One answer (key or label) per line; blank lines are ignored."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--answers {path}: cannot read file: {exc.strerror}") from None
        return cls(line.strip() for line in text.splitlines() if line.strip())

    @property
    def remaining(self) -> int:
        return len(self._answers)

    async def ask(self, question: Question) -> Answer:
        if not self._answers:
            return Answer(AnswerValue.SKIPPED)
        return _answer_from_text(self._answers.popleft(), question)


def _answer_from_text(text: str, question: Question) -> Answer:
    if question.type in (QuestionType.YES_NO, QuestionType.CONFIRMATION):
        yes = text.strip().lower() in ("y", "yes", "true", "1")
        return Answer(AnswerValue.YES if yes else AnswerValue.NO, text=text)
    if question.type == QuestionType.FREEFORM:
        return Answer(text, text=text)
    option = match_option(text, question.options)
    if option is None:
        return Answer(text, text=text)
    return Answer(option.key, selected_option=option, text=text)


class ConsoleInterviewer:
    """Asks on a terminal: prints the question and choices, reads one line of stdin.

    Honours ``question.timeout_seconds``: on expiry the question's default is used,
    else the answer is TIMEOUT. Reading runs in a worker thread that is abandoned
    on cancellation, so Ctrl-C and ``--timeout`` stay prompt.
    """

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self._stdin = stdin
        self._stdout = stdout

    async def ask(self, question: Question) -> Answer:
        out = self._stdout or sys.stderr
        out.write(_render(question))
        out.flush()
        with anyio.move_on_after(question.timeout_seconds):
            line = await anyio.to_thread.run_sync(self._readline, abandon_on_cancel=True)
            if line is None:
                return Answer(AnswerValue.SKIPPED)
            return _answer_from_text(line.strip(), question)
        out.write("\n(no answer in time)\n")
        return question.default or Answer(AnswerValue.TIMEOUT)

    def _readline(self) -> str | None:
        line = (self._stdin or sys.stdin).readline()
        return line if line else None


def _render(question: Question) -> str:
    lines = [f"[?] {question.text}"]
    if question.type == QuestionType.MULTIPLE_CHOICE:
        lines += [f"  [{o.key}] {strip_accelerator(o.label)}" for o in question.options]
        if question.default is not None and question.default.selected_option is not None:
            lines.append(f"  (default: {question.default.selected_option.key})")
        lines.append("Select: ")
    elif question.type in (QuestionType.YES_NO, QuestionType.CONFIRMATION):
        lines.append("[Y/N]: ")
    else:
        lines.append("> ")
    return "\n".join(lines)


class CallbackInterviewer:
    """Delegates to a function (sync or async) taking the question."""

    def __init__(self, callback: Callable[[Question], Answer | Awaitable[Answer]]) -> None:
        self._callback = callback

    async def ask(self, question: Question) -> Answer:
        result = self._callback(question)
        if isinstance(result, Answer):
            return result
        return await result


class RecordingInterviewer:
    """Wraps another interviewer and keeps every (question, answer) pair."""

    def __init__(self, inner: Interviewer) -> None:
        self.inner = inner
        self.recordings: list[tuple[Question, Answer]] = []

    async def ask(self, question: Question) -> Answer:
        answer = await self.inner.ask(question)
        self.recordings.append((question, answer))
        return answer
