"""Which notifications a run's events make, and what each says."""

from __future__ import annotations

from attractor import events as ev
from attractor.notify.payload import Notices, slack_message
from attractor.settings import NOTIFY_EVENTS

STARTED = ev.PipelineStarted(name="build", run_id="r1", run_dir="/runs/r1")


def _made(
    events: list[ev.Event], chosen: tuple[str, ...] = NOTIFY_EVENTS
) -> list[dict[str, object]]:
    notices = Notices(chosen, link=lambda run_id: f"http://h:1/#/run/{run_id}")
    return [n.payload for event in events for n in notices.of(event)]


def test_a_stage_that_will_retry_is_no_failure_yet() -> None:
    made = _made(
        [
            STARTED,
            ev.StageStarted(name="tests", index=1),
            ev.StageFailed(name="tests", index=1, error="flaky", will_retry=True),
            ev.StageFailed(name="tests", index=1, error="broken", will_retry=False),
            ev.PipelineFailed(error="tests failed: broken", duration=2.0),
        ]
    )
    assert [p["event"] for p in made] == [
        "run_started",
        "stage_failed",
        "run_failed",
        "run_finished",
    ]
    assert made[1]["details"] == {"error": "broken"}
    assert (made[2]["node"], made[2]["status"]) == ("tests", "fail")
    assert made[2]["url"] == "http://h:1/#/run/r1"


def test_a_timeout_is_a_failure_and_a_signal_a_stop() -> None:
    timed = _made(
        [STARTED, ev.PipelineTimedOut(timeout=60, node="slow", duration=60.2)],
        ("run_failed", "run_stopped"),
    )
    assert [(p["event"], p["status"], p["node"]) for p in timed] == [
        ("run_failed", "timed_out", "slow")
    ]
    stopped = _made(
        [STARTED, ev.PipelineInterrupted(signal="SIGTERM", node="slow", duration=3.0)],
        ("run_failed", "run_stopped", "run_finished"),
    )
    assert [(p["event"], p["status"]) for p in stopped] == [
        ("run_stopped", "terminated"),
        ("run_finished", "terminated"),
    ]
    assert stopped[0]["message"] == "build stopped (terminated) while running slow"


def test_only_the_events_picked_are_made() -> None:
    made = _made(
        [
            STARTED,
            ev.InterviewStarted(question="Ship?", stage="gate", review="x" * 5000),
            ev.InterviewCompleted(question="Ship?", answer="A", duration=1.0, stage="gate"),
            ev.PipelineCompleted(duration=4.0),
        ],
        ("gate_waiting", "run_succeeded"),
    )
    assert [p["event"] for p in made] == ["gate_waiting", "run_succeeded"]
    assert len(str(made[0]["details"]["review"])) == 1001  # type: ignore[index]
    assert made[1]["message"] == "build succeeded in 4.0s"


def test_slack_text_escapes_its_control_characters() -> None:
    payload = {"pipeline": "a<b", "run_id": "r1", "message": "x & y > z", "url": "http://h/"}
    assert slack_message(payload) == {
        "text": "*a&lt;b* `r1`: x &amp; y &gt; z\n<http://h/|Open the run>"
    }
