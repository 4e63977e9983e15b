"""The interviewer behind ``attractor serve``: who answered, and a default taken on timeout."""

from __future__ import annotations

import anyio
import pytest

from attractor.handlers.interviewer import Answer, Option, Question
from attractor.server.questions import WebInterviewer

pytestmark = pytest.mark.anyio

QUESTION = Question(
    text="Ship it?",
    options=(Option("A", "[A] Approve"), Option("R", "[R] Revise")),
    stage="gate",
)


async def _answer_when_asked(interviewer: WebInterviewer, **kwargs: str) -> Answer:
    got: list[Answer] = []

    async def ask() -> None:
        got.append(await interviewer.ask(QUESTION))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await anyio.wait_all_tasks_blocked()  # the question is waiting
            (qid,) = interviewer.pending
            interviewer.answer(qid, "R", **kwargs)
    return got[0]


async def test_the_page_and_other_clients_are_told_apart() -> None:
    page = await _answer_when_asked(WebInterviewer(), comment="needs tests", answered_by="page")
    assert (page.value, page.answered_by, page.text) == ("R", "page", "R: needs tests")
    api = await _answer_when_asked(WebInterviewer())
    assert (api.value, api.answered_by) == ("R", "api")


async def test_no_answer_in_time_takes_the_default_as_answered_by_timeout() -> None:
    default = Answer("A", selected_option=QUESTION.options[0])
    question = Question(
        text="Ship it?", options=QUESTION.options, default=default, timeout_seconds=0.05
    )
    answer = await WebInterviewer().ask(question)
    assert (answer.value, answer.answered_by) == ("A", "timeout")
