"""Human-in-the-loop: questions, answers and the frontends that answer them.

Built in: :class:`AutoApproveInterviewer` (``--auto-approve``),
:class:`QueueInterviewer` (``--answers FILE``, one answer per line),
:class:`ConsoleInterviewer` (stdin), :class:`CallbackInterviewer` and
:class:`RecordingInterviewer`.

Each answer says who gave it (``Answer.answered_by``, into the
``interview_completed`` event): ``cli`` typed at the terminal, ``answers_file``
read from ``--answers``, ``auto`` by ``--auto-approve``, ``timeout`` the gate's
default taken when no answer came in time, ``page`` or ``api`` over HTTP
(``attractor serve``), ``callback`` a library caller's function.
"""

from __future__ import annotations

import enum
import os
import stat
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Protocol, TextIO

import anyio
import anyio.lowlevel

from attractor import redact
from attractor.dot.accelerators import accelerator_key as accelerator_key
from attractor.dot.accelerators import strip_accelerator
from attractor.errors import InputFileError, UsageError
from attractor.fileio.reads import TEXT_LIMIT, read_bounded
from attractor.valueclass import frozen


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


@frozen
class Option:
    key: str
    label: str


@frozen
class Answer:
    """``value`` is an option key, an :class:`AnswerValue` or free text."""

    value: str
    selected_option: Option | None = None
    text: str = ""
    #: Who gave it: cli, answers_file, auto, timeout, page, api, callback ("" unknown).
    answered_by: str = ""

    def by(self, who: str) -> Answer:
        """This answer as given by ``who``, unless it already says who gave it."""
        return self if self.answered_by else replace(self, answered_by=who)

    @property
    def is_timeout(self) -> bool:
        return self.value == AnswerValue.TIMEOUT

    @property
    def is_skipped(self) -> bool:
        return self.value == AnswerValue.SKIPPED


@frozen
class Question:
    text: str
    type: QuestionType = QuestionType.MULTIPLE_CHOICE
    options: tuple[Option, ...] = ()
    default: Answer | None = None
    timeout_seconds: float | None = None
    stage: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    #: What the person is asked to review (a response, a file), shown before the question.
    review: str = ""
    #: The stage the run came from to the gate ("" when none): its changes are what
    #: the person approves (a front end shows that stage's diff).
    previous_stage: str = ""


class Interviewer(Protocol):
    """Anything that can answer a question (possibly after a while)."""

    async def ask(self, question: Question) -> Answer: ...


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
    """Answers every question at once, without asking anyone.

    Yes to a yes/no question. At a choice: the option named ``choice``
    (``--auto-approve=LABEL``: a label, key or accelerator) where the gate offers
    it, else the gate's default (``human.default_choice``), else its first
    option (the spec's rule). A free-text question gets ``auto-approved``.
    """

    def __init__(self, choice: str | None = None) -> None:
        self.choice = choice

    async def ask(self, question: Question) -> Answer:
        return self._pick(question).by("auto")

    def _pick(self, question: Question) -> Answer:
        if question.type in (QuestionType.YES_NO, QuestionType.CONFIRMATION):
            return Answer(AnswerValue.YES)
        if question.options:
            named = match_option(self.choice, question.options) if self.choice else None
            if named is not None:
                return Answer(named.key, selected_option=named)
            if question.default is not None:
                return question.default
            first = question.options[0]
            return Answer(first.key, selected_option=first)
        return Answer("auto-approved", text="auto-approved")


class QueueInterviewer:
    """Answers from a list, in order; SKIPPED once the list is used up."""

    def __init__(self, answers: Iterable[str]) -> None:
        self._answers: deque[str] = deque(answers)

    @classmethod
    def from_file(cls, path: Path) -> QueueInterviewer:
        """One answer (key or label) per line; blank lines are ignored.

        The file must be a regular file of at most
        :data:`~attractor.fileio.reads.TEXT_LIMIT` bytes: a FIFO or ``/dev/zero``
        would block or never end (answers can be piped to stdin instead).
        """
        try:
            text = read_bounded(path, TEXT_LIMIT, "answers file")
        except InputFileError as exc:
            raise UsageError(f"--answers {path}: {_answers_problem(exc)}") from None
        return cls(line.strip() for line in text.splitlines() if line.strip())

    @property
    def remaining(self) -> int:
        return len(self._answers)

    async def ask(self, question: Question) -> Answer:
        if not self._answers:
            return Answer(AnswerValue.SKIPPED)
        return _answer_from_text(self._answers.popleft(), question).by("answers_file")


def _answers_problem(exc: InputFileError) -> str:
    if exc.kind == "os":
        return f"cannot read file: {exc.reason.removeprefix('cannot read: ')}; {exc.hint}"
    if exc.kind == "not_utf8":
        return "not a UTF-8 text file; write one answer (a key or a label) per line"
    if exc.kind == "not_regular":
        return f"{exc.reason}; pass a regular file, or pipe the answers to stdin without --answers"
    return f"{exc.reason}; {exc.hint}"


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
    else the answer is TIMEOUT. No reader is ever left blocked behind a question:
    a real file descriptor is read only once anyio says it is readable, so Ctrl-C,
    SIGTERM and ``--timeout`` end the wait at once and the process can exit. A
    line typed after a question timed out stays for the next question. Streams
    without a file descriptor (``io.StringIO``) are read by one daemon thread per
    interviewer that queues every line it reads.
    """

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._reader: _FdLines | _ThreadLines | None = None

    async def ask(self, question: Question) -> Answer:
        out = self._stdout or sys.stderr
        out.write(redact.text(_render(question)))  # what it shows may quote a run's output
        out.flush()
        with anyio.move_on_after(question.timeout_seconds):
            line = await self._lines().next_line()
            if line is None and question.default is not None:
                # No answer can come: the question ends as if its time were up.
                out.write("\n(input closed; no answer can come)\n")
                return Answer(AnswerValue.TIMEOUT)
            if line is None:
                return Answer(AnswerValue.SKIPPED)
            return _answer_from_text(line.strip(), question).by("cli")
        out.write("\n(no answer in time)\n")
        return (question.default or Answer(AnswerValue.TIMEOUT)).by("timeout")

    def _lines(self) -> _FdLines | _ThreadLines:
        if self._reader is None:
            stream = self._stdin or sys.stdin
            fd = _fileno(stream)
            self._reader = _ThreadLines(stream) if fd is None else _FdLines(fd)
        return self._reader


def stdin_can_answer(stream: TextIO | None) -> bool:
    """Whether answers could ever come from ``stream``: a terminal, a pipe, a file
    with content. /dev/null, an empty file or a closed stream cannot answer; a
    stream without a file descriptor is given the benefit of the doubt."""
    if stream is None or stream.closed:
        return False
    fd = _fileno(stream)
    if fd is None:
        return True
    try:
        if os.isatty(fd):
            return True
        info = os.fstat(fd)
    except OSError:
        return False
    if stat.S_ISCHR(info.st_mode):  # /dev/null and the like, not a terminal
        return False
    return not stat.S_ISREG(info.st_mode) or info.st_size > 0


def _fileno(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):  # io.StringIO, a closed or fake stream
        return None


class _FdLines:
    """Lines of a file descriptor, read only when it is readable (never blocks).

    Reads bypass the TextIO buffer on purpose: nothing else reads this stream,
    and a buffered readline would block the event loop.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lines: deque[str] = deque()
        self._partial = b""
        self._eof = False
        # Regular files (and devices such as /dev/null) are always readable and
        # cannot be watched by epoll; pipes, ttys and sockets can.
        mode = os.fstat(fd).st_mode
        self._pollable = not stat.S_ISREG(mode)

    async def next_line(self) -> str | None:
        while not self._lines:
            if self._eof:
                return None
            await self._wait()
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:  # a non-blocking fd woke up with nothing to read
                continue
            except OSError:  # e.g. EIO once the terminal is gone: no more answers
                chunk = b""
            self._feed(chunk)
        return self._lines.popleft()

    async def _wait(self) -> None:
        if not self._pollable:
            await anyio.lowlevel.checkpoint()
            return
        try:
            await anyio.wait_readable(self._fd)
        except PermissionError:  # a device epoll refuses: reading it does not block
            self._pollable = False

    def _feed(self, chunk: bytes) -> None:
        if not chunk:
            self._eof = True
            chunk, self._partial = self._partial, b""
            if chunk:
                self._lines.append(chunk.decode("utf-8", errors="replace"))
            return
        *complete, self._partial = (self._partial + chunk).split(b"\n")
        self._lines.extend(line.decode("utf-8", errors="replace") for line in complete)


class _ThreadLines:
    """Lines of a stream without a file descriptor, read by one daemon thread.

    The thread hands each line to the event loop, which queues it, so a line
    read while no question waits is kept for the next one. The thread stops at
    end of input, or when the event loop it reports to has finished.
    """

    def __init__(self, stream: TextIO) -> None:
        self._lines: deque[str | None] = deque()
        self._ready = anyio.Event()
        token = anyio.lowlevel.current_token()
        # Imported here, not at the top: only a stream without a descriptor needs it.
        from anyio.from_thread import run_sync

        self._run_sync = run_sync
        threading.Thread(target=self._read, args=(stream, token), daemon=True).start()

    def _read(self, stream: TextIO, token: anyio.lowlevel.EventLoopToken) -> None:
        while True:
            line = stream.readline()
            try:
                self._run_sync(self._deliver, line or None, token=token)
            except RuntimeError:  # the event loop is gone: nobody will ask again
                return
            if not line:
                return

    def _deliver(self, line: str | None) -> None:
        self._lines.append(line)
        self._ready.set()

    async def next_line(self) -> str | None:
        while not self._lines:
            self._ready = anyio.Event()
            await self._ready.wait()
        line = self._lines[0]
        if line is not None:  # end of input stays queued for later questions
            self._lines.popleft()
        return line


def _render(question: Question) -> str:
    lines = []
    if question.review:
        lines += ["--- to review ---", question.review.rstrip(), "-----------------"]
    lines.append(f"[?] {question.text}")
    if question.type == QuestionType.MULTIPLE_CHOICE:
        lines += [f"  [{o.key}] {strip_accelerator(o.label)}" for o in question.options]
        if question.default is not None and question.default.selected_option is not None:
            lines.append(f"  (default: {question.default.selected_option.key})")
        if question.options:
            key = question.options[0].key
            lines.append(f"  (a comment may follow the choice: '{key}: your comment')")
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
        if not isinstance(result, Answer):
            result = await result
        return result.by("callback")


class RecordingInterviewer:
    """Wraps another interviewer and keeps every (question, answer) pair."""

    def __init__(self, inner: Interviewer) -> None:
        self.inner = inner
        self.recordings: list[tuple[Question, Answer]] = []

    async def ask(self, question: Question) -> Answer:
        answer = await self.inner.ask(question)
        self.recordings.append((question, answer))
        return answer
