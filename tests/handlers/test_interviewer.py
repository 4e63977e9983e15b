"""Interviewers: accelerator keys, queue, console (stdin) with timeout and default."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from attractor.errors import UsageError
from attractor.handlers.interviewer import (
    Answer,
    AnswerValue,
    AutoApproveInterviewer,
    ConsoleInterviewer,
    Option,
    Question,
    QuestionType,
    QueueInterviewer,
    accelerator_key,
)

pytestmark = pytest.mark.anyio

OPTIONS = (Option("Y", "[Y] Yes, deploy"), Option("N", "N) No"))
QUESTION = Question("Ship it?", options=OPTIONS, stage="gate")


@pytest.mark.parametrize(
    ("label", "key"),
    [("[Y] Yes", "Y"), ("y) yes", "Y"), ("A - Abort", "A"), ("retry", "R")],
)
def test_accelerator_keys(label: str, key: str) -> None:
    assert accelerator_key(label) == key


async def test_auto_approve() -> None:
    assert (await AutoApproveInterviewer().ask(QUESTION)).value == "Y"
    yes_no = Question("ok?", type=QuestionType.YES_NO)
    assert (await AutoApproveInterviewer().ask(yes_no)).value == AnswerValue.YES


async def test_queue_from_file_answers_in_order_then_skips(tmp_path: Path) -> None:
    path = tmp_path / "answers"
    path.write_text("No\n\n y \n")
    queue = QueueInterviewer.from_file(path)
    assert (await queue.ask(QUESTION)).value == "N"
    assert (await queue.ask(QUESTION)).value == "Y"
    assert (await queue.ask(QUESTION)).is_skipped


def test_unreadable_answers_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--answers"):
        QueueInterviewer.from_file(tmp_path / "missing")


async def test_console_shows_choices_and_reads_a_key() -> None:
    out = io.StringIO()
    console = ConsoleInterviewer(stdin=io.StringIO("n\n"), stdout=out)
    answer = await console.ask(QUESTION)
    assert answer.value == "N"
    assert "[Y] Yes, deploy" in out.getvalue() and "[N] No" in out.getvalue()


async def test_console_end_of_input_is_skipped() -> None:
    console = ConsoleInterviewer(stdin=io.StringIO(""), stdout=io.StringIO())
    assert (await console.ask(QUESTION)).is_skipped


async def test_console_timeout_uses_the_default_or_reports_timeout() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "r") as never:
        try:
            console = ConsoleInterviewer(stdin=never, stdout=io.StringIO())
            default = Answer("N", selected_option=OPTIONS[1])
            timed = Question("Ship it?", options=OPTIONS, timeout_seconds=0.05, default=default)
            assert await console.ask(timed) == default.by("timeout")
            bare = Question("Ship it?", options=OPTIONS, timeout_seconds=0.05)
            assert (await console.ask(bare)).is_timeout
        finally:
            os.close(write_fd)


async def test_console_without_a_file_descriptor_answers_successive_questions_in_order() -> None:
    console = ConsoleInterviewer(stdin=io.StringIO("y\nn\n"), stdout=io.StringIO())
    assert [(await console.ask(QUESTION)).value for _ in range(3)] == ["Y", "N", "skipped"]


async def test_console_reads_answers_from_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "answers.txt"
    path.write_text("n\ny")  # the last line has no newline
    with path.open() as stdin:
        console = ConsoleInterviewer(stdin=stdin, stdout=io.StringIO())
        answers = [(await console.ask(QUESTION)).value for _ in range(3)]
    assert answers == ["N", "Y", "skipped"]
