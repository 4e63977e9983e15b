"""One line of text per notable event, shared by the plain and the live display."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text

from attractor import events as ev

_STATUS_STYLE = {
    "success": ("ok", "green"),
    "partial_success": ("ok", "yellow"),
    "skipped": ("--", "dim"),
    "retry": ("..", "yellow"),
    "fail": ("!!", "red"),
}


def _line(mark: str, style: str, *parts: tuple[str, str]) -> Text:
    text = Text()
    text.append(mark, style=f"bold {style}")
    for chunk, chunk_style in parts:
        if not chunk:
            continue
        text.append(" ")
        text.append(chunk, style=chunk_style)
    return text


def _seconds(value: float) -> str:
    return f"{value:.1f}s"


def _pipeline_started(e: ev.PipelineStarted) -> Text:
    verb = "resuming" if e.resumed else "running"
    return _line("==", "cyan", (f"{verb} {e.name}", "bold"), (f"in {e.run_dir}", "dim"))


def _stage_started(e: ev.StageStarted) -> Text:
    handler = f"({e.handler})" if e.handler else ""
    attempt = f"attempt {e.attempt}" if e.attempt > 1 else ""
    return _line("->", "cyan", (e.name, "bold"), (handler, "dim"), (attempt, "yellow"))


def _stage_completed(e: ev.StageCompleted) -> Text:
    mark, style = _STATUS_STYLE.get(e.status, ("ok", "green"))
    note = f"- {e.notes}" if e.notes else ""
    chose = f"-> {e.preferred_label}" if e.preferred_label else ""
    return _line(
        mark,
        style,
        (e.name, "bold"),
        (e.status, style),
        (_seconds(e.duration), ""),
        (chose, "cyan"),
        (note, "dim"),
    )


def _stage_failed(e: ev.StageFailed) -> Text:
    retry = "(will retry)" if e.will_retry else ""
    return _line("!!", "red", (e.name, "bold"), ("failed:", "red"), (e.error, ""), (retry, "dim"))


def _stage_retrying(e: ev.StageRetrying) -> Text:
    return _line(
        "..", "yellow", (e.name, "bold"), (f"retrying in {_seconds(e.delay)}", "yellow"),
        (f"(attempt {e.attempt})", "dim"),
    )  # fmt: skip


def _parallel_started(e: ev.ParallelStarted) -> Text:
    return _line("=>", "cyan", (e.node, "bold"), (f"fans out to {e.branch_count} branches", ""))


def _branch_completed(e: ev.ParallelBranchCompleted) -> Text:
    mark, style = ("ok", "green") if e.success else ("!!", "red")
    outcome = "succeeded" if e.success else "failed"
    return _line(
        mark, style, (f"{e.node}/{e.branch}", "bold"), (f"branch {outcome}", style),
        (_seconds(e.duration), ""),
    )  # fmt: skip


def _parallel_completed(e: ev.ParallelCompleted) -> Text:
    counts = f"{e.success_count} succeeded, {e.failure_count} failed"
    return _line("<=", "cyan", (e.node, "bold"), ("joined:", ""), (counts, ""))


def _interview_started(e: ev.InterviewStarted) -> Text:
    return _line("??", "magenta", (e.stage, "bold"), (e.question, ""))


def _interview_completed(e: ev.InterviewCompleted) -> Text:
    who = f"(by {e.answered_by})" if e.answered_by else ""
    comment = f"- {e.comment}" if e.comment else ""
    return _line(
        "??", "magenta", ("answer:", ""), (e.answer, "bold"), (who, "dim"), (comment, "dim")
    )


def _interview_timeout(e: ev.InterviewTimeout) -> Text:
    return _line("??", "yellow", (e.stage, "bold"), ("no answer in time", "yellow"))


def _reflection(e: ev.AgentReflection) -> Text:
    return _line("~~", "magenta", (e.node, "bold"), (f"reflected at turn {e.turn}", ""))


def _agent_warning(e: ev.AgentWarning) -> Text:
    return _line("!!", "yellow", (e.node, "bold"), (e.message, "yellow"))


_FORMATTERS: dict[type[ev.Event], Callable[[Any], Text]] = {
    ev.PipelineStarted: _pipeline_started,
    ev.StageStarted: _stage_started,
    ev.StageCompleted: _stage_completed,
    ev.StageFailed: _stage_failed,
    ev.StageRetrying: _stage_retrying,
    ev.ParallelStarted: _parallel_started,
    ev.ParallelBranchCompleted: _branch_completed,
    ev.ParallelCompleted: _parallel_completed,
    ev.InterviewStarted: _interview_started,
    ev.InterviewCompleted: _interview_completed,
    ev.InterviewTimeout: _interview_timeout,
    ev.AgentReflection: _reflection,
    ev.AgentWarning: _agent_warning,
}


def stage_line(event: ev.Event) -> Text | None:
    """The display line for ``event``, or None when it is not shown as a line."""
    formatter = _FORMATTERS.get(type(event))
    if formatter is None:
        return None
    return formatter(event)
