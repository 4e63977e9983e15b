"""wait.human gates answered by queue, auto-approve and timeouts."""

from __future__ import annotations

import io
import os
from pathlib import Path

import anyio
import pytest

from attractor.events import Event
from attractor.handlers.interviewer import (
    Answer,
    AnswerValue,
    AutoApproveInterviewer,
    CallbackInterviewer,
    ConsoleInterviewer,
    Question,
    QueueInterviewer,
    RecordingInterviewer,
)
from tests.engine.enginekit import Recorder, executed, graph_of, run

pytestmark = pytest.mark.anyio

GATE = (
    'gate [shape=hexagon, label="Ship it?"]\n deploy\n fix\n'
    "start -> gate\n"
    'gate -> deploy [label="[Y] Yes, deploy"]\n'
    'gate -> fix [label="[N] No, fix it"]\n'
    "deploy -> done\n fix -> done\n"
)


async def test_queue_answer_by_key_routes_to_the_chosen_edge(tmp_path: Path) -> None:
    answers = tmp_path / "answers.txt"
    answers.write_text("n\n")
    recorder = Recorder()
    interviewer = RecordingInterviewer(QueueInterviewer.from_file(answers))
    result = await run(graph_of(GATE), tmp_path, interviewer=interviewer, observers=[recorder])
    assert executed(result) == ["start", "gate", "fix", "done"]
    question, answer = interviewer.recordings[0]
    assert [(o.key, o.label) for o in question.options] == [
        ("Y", "[Y] Yes, deploy"),
        ("N", "[N] No, fix it"),
    ]
    assert answer.value == "N"
    assert recorder.of("interview_started")[0]["stage"] == "gate"
    assert recorder.of("interview_completed")[0]["answer"] == "N"


async def test_queue_answer_by_label_sets_context_keys(tmp_path: Path) -> None:
    result = await run(graph_of(GATE), tmp_path, interviewer=QueueInterviewer(["Yes, deploy"]))
    assert executed(result) == ["start", "gate", "deploy", "done"]
    import json

    status = json.loads((result.run_dir / "gate" / "status.json").read_text())
    assert status["context_updates"] == {
        "human.gate.selected": "Y",
        "human.gate.label": "[Y] Yes, deploy",
        "human.gate.comment": "",
        "human.gate.node": "gate",
    }
    assert status["preferred_label"] == "[Y] Yes, deploy"


async def test_an_answer_matching_no_choice_is_asked_again_without_a_retry(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    interviewer = RecordingInterviewer(QueueInterviewer(["maybe", "n"]))
    graph = graph_of(GATE.replace('label="Ship it?"', 'label="Ship it?", max_retries=0'))
    result = await run(graph, tmp_path, interviewer=interviewer, observers=[recorder])
    assert executed(result) == ["start", "gate", "fix", "done"]
    assert [e["answer"] for e in recorder.of("interview_rejected")] == ["maybe"]
    again = interviewer.recordings[1][0]
    assert again.text == "'maybe' is not one of the choices (Y, N). Ship it?"
    assert recorder.of("stage_retrying") == []


async def test_a_comment_after_the_choice_reaches_the_next_prompt(tmp_path: Path) -> None:
    graph = graph_of(GATE.replace("fix\n", 'fix [prompt="Fix what the reviewer found"]\n', 1))
    result = await run(graph, tmp_path, interviewer=QueueInterviewer(["N: the tests are too weak"]))
    assert executed(result) == ["start", "gate", "fix", "done"]
    import json

    status = json.loads((result.run_dir / "gate" / "status.json").read_text())
    assert status["context_updates"]["human.gate.comment"] == "the tests are too weak"
    assert status["notes"] == "human chose [N] No, fix it: the tests are too weak"
    prompt = (result.run_dir / "fix" / "prompt.md").read_text()
    assert "## Comment from the reviewer at gate (chose [N] No, fix it)" in prompt
    assert "the tests are too weak" in prompt and prompt.endswith("Fix what the reviewer found")


async def test_the_question_shows_the_previous_response_or_a_named_file(tmp_path: Path) -> None:
    interviewer = RecordingInterviewer(QueueInterviewer(["y", "y"]))
    (tmp_path / "diff.txt").write_text("+ added a line\n" * 2000)
    graph = graph_of(
        'work [prompt="Write it"]\n'
        'gate [shape=hexagon, label="Ship it?"]\n'
        'gate2 [shape=hexagon, label="Really?", human.show="diff.txt"]\n'
        'start -> work -> gate\n gate -> gate2 [label="[Y] Yes"]\n gate -> done [label="[N] No"]\n'
        'gate2 -> done [label="[Y] Yes"]\n gate2 -> work [label="[N] No"]'
    )
    await run(graph, tmp_path, interviewer=interviewer)
    first, second = (q for q, _ in interviewer.recordings)
    assert first.review == "response of work:\n[Simulated] Response for stage: work"
    assert second.review.startswith("diff.txt:\n+ added a line")
    assert second.review.endswith("[... cut]") and len(second.review) < 4100


async def test_empty_queue_fails_the_gate_with_a_clear_reason(tmp_path: Path) -> None:
    result = await run(graph_of(GATE), tmp_path, interviewer=QueueInterviewer([]))
    assert result.status == "fail"
    assert "no answer given" in result.failure_reason


async def test_auto_approve_takes_the_first_choice(tmp_path: Path) -> None:
    result = await run(graph_of(GATE), tmp_path, interviewer=AutoApproveInterviewer())
    assert executed(result) == ["start", "gate", "deploy", "done"]


async def test_timeout_takes_the_default_choice(tmp_path: Path) -> None:
    graph = graph_of(GATE.replace('label="Ship it?"', 'label="Ship it?", human.default_choice=fix'))

    def timeout(question: Question) -> Answer:
        return Answer(AnswerValue.TIMEOUT)

    recorder = Recorder()
    result = await run(
        graph, tmp_path, interviewer=CallbackInterviewer(timeout), observers=[recorder]
    )
    assert executed(result) == ["start", "gate", "fix", "done"]
    assert recorder.of("interview_timeout")[0]["stage"] == "gate"


async def test_timeout_without_default_is_retry_then_fail(tmp_path: Path) -> None:
    graph = graph_of(GATE.replace('label="Ship it?"', 'label="Ship it?", max_retries=1'))
    asked: list[str] = []

    async def timeout(question: Question) -> Answer:
        asked.append(question.stage)
        return Answer(AnswerValue.TIMEOUT)

    result = await run(graph, tmp_path, interviewer=CallbackInterviewer(timeout))
    assert asked == ["gate", "gate"]
    assert result.status == "fail"
    assert "timed out with no human.default_choice" in result.failure_reason


TWO_GATES = (
    'first [shape=hexagon, label="First?", human.timeout="50ms", human.default_choice=b]\n'
    'second [shape=hexagon, label="Second?"]\n a\n b\n c\n d\n'
    "start -> first\n"
    'first -> a [label="[A] Alpha"]\n first -> b [label="[B] Beta"]\n'
    "a -> second\n b -> second\n"
    'second -> c [label="[C] Gamma"]\n second -> d [label="[D] Delta"]\n'
    "c -> done\n d -> done\n"
)


async def test_console_timed_out_gate_takes_its_default_and_the_next_gate_gets_the_next_line(
    tmp_path: Path,
) -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "r") as stdin:
        try:
            console = ConsoleInterviewer(stdin=stdin, stdout=io.StringIO())

            def answer_after_timeout(event: Event) -> None:
                # The line arrives only once the first gate gave up waiting: it
                # belongs to the second gate, not to a reader left behind.
                if event.type == "stage_completed" and event.to_json()["name"] == "first":
                    os.write(write_fd, b"D\n")

            with anyio.fail_after(20):
                result = await run(
                    graph_of(TWO_GATES),
                    tmp_path,
                    interviewer=console,
                    observers=[answer_after_timeout],
                )
        finally:
            os.close(write_fd)
    assert executed(result) == ["start", "first", "b", "second", "d", "done"]
    assert result.node_results[1].note == "human chose [B] Beta"  # the default, after 50ms


async def test_console_lines_typed_ahead_go_to_successive_gates(tmp_path: Path) -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"A\nC\n")
    graph = graph_of(TWO_GATES.replace('human.timeout="50ms", ', ""))
    with os.fdopen(read_fd, "r") as stdin:
        try:
            with anyio.fail_after(20):
                result = await run(
                    graph, tmp_path, interviewer=ConsoleInterviewer(stdin, io.StringIO())
                )
        finally:
            os.close(write_fd)
    assert executed(result) == ["start", "first", "a", "second", "c", "done"]


async def test_a_gate_timeout_without_human_timeout_takes_the_default_choice(
    tmp_path: Path,
) -> None:
    graph = graph_of(
        GATE.replace(
            'label="Ship it?"', 'label="Ship it?", timeout="100ms", human.default_choice=fix'
        )
    )
    read_fd, write_fd = os.pipe()  # nobody ever answers
    with os.fdopen(read_fd, "r") as stdin:
        try:
            with anyio.fail_after(20):
                result = await run(
                    graph, tmp_path, interviewer=ConsoleInterviewer(stdin, io.StringIO())
                )
        finally:
            os.close(write_fd)
    assert result.status == "success", result.failure_reason
    assert executed(result) == ["start", "gate", "fix", "done"]


def _answered(recorder: Recorder) -> list[tuple[str, str, str, str]]:
    return [
        (e["stage"], e["answer"], e["answered_by"], e["comment"])
        for e in recorder.of("interview_completed")
    ]


async def test_the_event_log_says_who_answered_and_the_comment(tmp_path: Path) -> None:
    queue = Recorder()
    await run(
        graph_of(GATE),
        tmp_path / "q",
        interviewer=QueueInterviewer(["N: the tests are too weak"]),
        observers=[queue],
    )
    assert _answered(queue) == [("gate", "N", "answers_file", "the tests are too weak")]
    assert queue.of("interview_completed")[0]["label"] == "[N] No, fix it"
    auto = Recorder()
    await run(
        graph_of(GATE), tmp_path / "a", interviewer=AutoApproveInterviewer(), observers=[auto]
    )
    assert _answered(auto) == [("gate", "Y", "auto", "")]
    called = Recorder()
    pick = CallbackInterviewer(lambda question: Answer("Y", text="Y: looks fine"))
    await run(graph_of(GATE), tmp_path / "c", interviewer=pick, observers=[called])
    assert _answered(called) == [("gate", "Y", "callback", "looks fine")]


async def test_a_default_taken_on_timeout_is_answered_by_timeout(tmp_path: Path) -> None:
    graph = graph_of(GATE.replace('label="Ship it?"', 'label="Ship it?", human.default_choice=fix'))
    recorder = Recorder()
    timeout = CallbackInterviewer(lambda question: Answer(AnswerValue.TIMEOUT))
    await run(graph, tmp_path, interviewer=timeout, observers=[recorder])
    assert _answered(recorder) == [("gate", "N", "timeout", "")]


async def test_a_console_answer_is_by_cli_and_its_timed_out_default_by_timeout(
    tmp_path: Path,
) -> None:
    read_fd, write_fd = os.pipe()
    recorder = Recorder()
    with os.fdopen(read_fd, "r") as stdin:
        try:
            console = ConsoleInterviewer(stdin=stdin, stdout=io.StringIO())

            def answer_after_timeout(event: Event) -> None:
                if event.type == "stage_completed" and event.to_json()["name"] == "first":
                    os.write(write_fd, b"D: by hand\n")

            with anyio.fail_after(20):
                await run(
                    graph_of(TWO_GATES),
                    tmp_path,
                    interviewer=console,
                    observers=[answer_after_timeout, recorder],
                )
        finally:
            os.close(write_fd)
    assert _answered(recorder) == [("first", "B", "timeout", ""), ("second", "D", "cli", "by hand")]
