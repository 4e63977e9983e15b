"""The run displays, fed real events: what each mode prints and where."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from rich.text import Text

from attractor import events as ev
from attractor.cli.display import (
    JsonDisplay,
    LiveDisplay,
    PlainDisplay,
    QuietDisplay,
    choose_mode,
    make_display,
    turn_limit_warning,
)
from attractor.redact import Redactor

STARTED = ev.StageStarted(name="plan", index=1, handler="codergen")
LIMIT = ev.TurnLimitReached(node="impl", turns_used=10, limit=10, reason="turn limit reached")


def _run_events() -> list[ev.Event]:
    return [
        ev.PipelineStarted(name="demo", run_id="r1", run_dir="runs/r1"),
        STARTED,
        ev.StageCompleted(name="plan", index=1, duration=0.25, status="success", notes="done"),
        ev.StageStarted(name="impl", index=2, handler="tool"),
        ev.StageFailed(name="impl", index=2, error="exit code 3", will_retry=True),
        ev.StageRetrying(name="impl", index=2, attempt=2, delay=0.2),
        ev.ParallelStarted(node="fan", branch_count=2),
        ev.ParallelBranchCompleted(node="fan", branch="a", index=0, duration=1.0, success=True),
        ev.ParallelCompleted(node="fan", duration=1.0, success_count=2, failure_count=0),
        ev.InterviewStarted(question="Ship it?", stage="gate"),
        ev.InterviewCompleted(question="Ship it?", answer="Approve", duration=0.1),
        ev.CheckpointSaved(node_id="plan"),
    ]


def test_plain_display_prints_one_line_per_notable_event() -> None:
    out, err = io.StringIO(), io.StringIO()
    display = PlainDisplay(out, err)
    for event in _run_events():
        display(event)
    lines = out.getvalue().splitlines()
    assert lines == [
        "== running demo in runs/r1",
        "-> plan (codergen)",
        "ok plan success 0.2s - done",
        "-> impl (tool)",
        "!! impl failed: exit code 3 (will retry)",
        ".. impl retrying in 0.2s (attempt 2)",
        "=> fan fans out to 2 branches",
        "ok fan/a branch succeeded 1.0s",
        "<= fan joined: 2 succeeded, 0 failed",
        "?? gate Ship it?",
        "?? answer: Approve",
    ]
    assert err.getvalue() == ""


def test_an_answer_line_says_who_answered_and_the_comment() -> None:
    out = io.StringIO()
    display = PlainDisplay(out, io.StringIO())
    display(
        ev.InterviewCompleted(
            question="Ship it?",
            answer="R",
            duration=3.0,
            answered_by="page",
            comment="tests too weak",
            stage="gate",
            label="[R] Revise",
        )
    )
    assert out.getvalue() == "?? answer: R (by page) - tests too weak\n"


def test_turn_limit_warning_is_one_line_naming_node_and_the_three_ways() -> None:
    out, err = io.StringIO(), io.StringIO()
    display = PlainDisplay(out, err)
    display(LIMIT)
    lines = err.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0] == turn_limit_warning(LIMIT)
    for needle in ("impl", "max_turns", "--max-turns", "ATTRACTOR_MAX_TURNS", "10 of 10"):
        assert needle in lines[0]
    assert out.getvalue() == ""


def test_json_display_writes_each_event_as_one_parseable_line() -> None:
    out, err = io.StringIO(), io.StringIO()
    display = JsonDisplay(out, err)
    events = [*_run_events(), LIMIT]
    for event in events:
        display(event)
    parsed = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [p["type"] for p in parsed] == [e.type for e in events]
    assert parsed[1] == {"type": "stage_started", **STARTED.to_json()}
    assert "ATTRACTOR_MAX_TURNS" in err.getvalue()


def test_quiet_display_prints_nothing_not_even_warnings() -> None:
    out, err = io.StringIO(), io.StringIO()
    display = QuietDisplay(out, err)
    for event in [*_run_events(), LIMIT]:
        display(event)
    assert out.getvalue() == err.getvalue() == ""


def _terminal(buffer: io.StringIO, **kwargs: object) -> Console:
    return Console(file=buffer, force_terminal=True, width=120, **kwargs)  # type: ignore[arg-type]


def test_live_region_shows_active_nodes_with_handler_attempt_and_turns() -> None:
    display = LiveDisplay(_terminal(io.StringIO()), io.StringIO())
    display(ev.StageStarted(name="plan", index=1, handler="codergen", attempt=2))
    display(ev.StageStarted(name="lint", index=2, handler="tool"))
    display(ev.AgentTurnStarted(node="plan", turn=3, max_turns=10, kind="work"))
    probe = io.StringIO()
    Console(file=probe, width=120, no_color=True).print(display.view)
    lines = probe.getvalue().splitlines()
    assert len(lines) == 2
    assert "plan (codergen)" in lines[0]
    assert "attempt 2" in lines[0]
    assert "turn 3/10" in lines[0]
    assert "lint (tool)" in lines[1]

    display(ev.AgentTurnStarted(node="plan", turn=4, max_turns=10, kind="reflection"))
    display(ev.StageCompleted(name="lint", index=2, duration=0.1))
    probe = io.StringIO()
    Console(file=probe, width=120, no_color=True).print(display.view)
    lines = probe.getvalue().splitlines()
    assert len(lines) == 1
    assert "reflecting" in lines[0]


def test_live_region_counts_tool_calls_and_names_the_last() -> None:
    display = LiveDisplay(_terminal(io.StringIO()), io.StringIO())
    display(ev.StageStarted(name="impl", index=1, handler="codergen"))
    display(ev.AgentTurnStarted(node="impl", turn=2, max_turns=10, kind="work"))
    for tool in ("Read", "Bash"):
        display(
            ev.ToolCallCompleted(
                node="impl", turn=2, tool=tool, arguments={}, output="", is_error=False, duration=0
            )
        )
    probe = io.StringIO()
    Console(file=probe, width=120, no_color=True).print(display.view)
    (line,) = probe.getvalue().splitlines()
    assert "turn 2/10" in line
    assert "2 tool calls, last Bash" in line


def test_live_display_prints_finished_nodes_above_the_region() -> None:
    buffer = io.StringIO()
    with LiveDisplay(_terminal(buffer), io.StringIO()) as display:
        display(STARTED)
        display(ev.StageCompleted(name="plan", index=1, duration=0.5))
    shown = Text.from_ansi(buffer.getvalue()).plain
    assert "ok plan success 0.5s" in shown
    assert "-> plan" not in shown
    assert display.view.active == {}


def test_live_display_warns_in_one_unwrapped_line_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert len(turn_limit_warning(LIMIT)) > 120  # longer than the terminal is wide
    with LiveDisplay(_terminal(out), err) as display:
        display(ev.StageStarted(name="impl", index=2, handler="codergen"))
        display(LIMIT)
        assert display.live.is_started  # the live region came back after the warning
    assert err.getvalue().splitlines() == [turn_limit_warning(LIMIT)]
    assert "turn limit" not in Text.from_ansi(out.getvalue()).plain


def test_live_display_warns_on_stderr_while_stepped_aside_too() -> None:
    out, err = io.StringIO(), io.StringIO()
    with LiveDisplay(_terminal(out), err) as display:
        display(ev.InterviewStarted(question="Ship it?", stage="gate"))
        display(LIMIT)
        assert not display.live.is_started  # a human is still answering
    assert err.getvalue().splitlines() == [turn_limit_warning(LIMIT)]


def test_mode_is_plain_when_not_a_terminal_or_no_color() -> None:
    piped = Console(file=io.StringIO())
    assert choose_mode(piped, json_mode=False, quiet=False) == "plain"
    no_color = _terminal(io.StringIO(), no_color=True)
    assert choose_mode(no_color, json_mode=False, quiet=False) == "plain"
    assert choose_mode(_terminal(io.StringIO()), json_mode=False, quiet=False) == "live"
    assert choose_mode(piped, json_mode=True, quiet=False) == "json"
    assert choose_mode(piped, json_mode=False, quiet=True) == "quiet"
    assert isinstance(make_display("plain", piped), PlainDisplay)


def test_live_region_steps_aside_while_a_human_answers() -> None:
    with LiveDisplay(_terminal(io.StringIO()), io.StringIO()) as display:
        assert display.live.is_started
        display(ev.InterviewStarted(question="Ship it?", stage="gate"))
        assert not display.live.is_started
        display(ev.InterviewCompleted(question="Ship it?", answer="A", duration=1.0))
        assert display.live.is_started
    assert not display.live.is_started


def _region(display: LiveDisplay) -> list[str]:
    probe = io.StringIO()
    Console(file=probe, width=160, no_color=True).print(display.view)
    return probe.getvalue().splitlines()


def test_live_region_shows_the_tool_call_output_line_progress_and_elapsed(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "stdout.txt").write_text("compiling\nlinking step 2 of 3\n\n")
    display = LiveDisplay(
        _terminal(io.StringIO()), io.StringIO(), main_path=["start", "build", "done"]
    )
    display(ev.PipelineStarted(name="p", run_id="r", run_dir=str(tmp_path)))
    display(ev.StageStarted(name="start", index=1, handler="start"))
    display(ev.StageCompleted(name="start", index=1, duration=0.0))
    display(ev.StageStarted(name="build", index=2, handler="tool"))
    display(ev.StageStarted(name="fix", index=3, handler="codergen"))
    display(ev.AgentTurnStarted(node="fix", turn=2, max_turns=8, kind="work"))
    display(ev.ToolCallStarted(node="fix", turn=2, tool="shell", summary="pytest -q tests"))
    build, fix, footer = _region(display)
    assert "build (tool)" in build and "│ linking step 2 of 3" in build
    assert "turn 2/8" in fix and "▸ shell: pytest -q tests" in fix
    assert footer.strip().startswith("elapsed ")
    assert "node 2 of 3 on the main path" in footer

    display(ev.ToolCallCompleted(
        node="fix", turn=2, tool="shell", arguments={}, output="", is_error=False, duration=0.1
    ))  # fmt: skip
    assert "▸" not in _region(display)[1]


def test_plain_and_json_output_stay_line_per_event_with_tool_calls() -> None:
    started = ev.ToolCallStarted(node="fix", turn=1, tool="shell", summary="make")
    out = io.StringIO()
    PlainDisplay(out, io.StringIO())(started)
    assert out.getvalue() == ""
    out = io.StringIO()
    JsonDisplay(out, io.StringIO())(started)
    assert json.loads(out.getvalue())["summary"] == "make"


def test_tool_call_summary_is_one_short_line() -> None:
    assert ev.call_summary({"command": "pytest   -q\n tests"}) == "pytest -q tests"
    assert ev.call_summary({"a": 1, "b": "x"}) == "a=1 b=x"
    assert len(ev.call_summary({"path": "p" * 500})) == 200


def test_live_region_redacts_a_running_tools_output_line(tmp_path: Path) -> None:
    # The output file is scrubbed only when the command ends: the line shown before is not.
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "stdout.txt").write_text("using dt-0123456789abcdef\n")
    redactor = Redactor.from_environment({"DEPLOY_TOKEN": "dt-0123456789abcdef"})
    display = LiveDisplay(_terminal(io.StringIO()), io.StringIO(), redactor=redactor)
    display(ev.PipelineStarted(name="p", run_id="r", run_dir=str(tmp_path)))
    display(ev.StageStarted(name="deploy", index=1, handler="tool"))

    [line, _footer] = _region(display)
    assert "│ using [redacted:DEPLOY_TOKEN]" in line
