"""One line of text per notable event, shared by the plain and the live display.

A line is a :class:`Line` of styled chunks: the plain display joins the chunks
(no rich text is built for a piped run), the live display turns the line into
rich text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attractor import events as ev

if TYPE_CHECKING:
    from rich.text import Text

_STATUS_STYLE = {
    "success": ("ok", "green"),
    "partial_success": ("ok", "yellow"),
    "skipped": ("--", "dim"),
    "retry": ("..", "yellow"),
    "fail": ("!!", "red"),
}


class Line:
    """One display line: a mark and the non-empty chunks after it, each with a style."""

    __slots__ = ("chunks",)

    def __init__(self, chunks: list[tuple[str, str]]) -> None:
        self.chunks = chunks

    @property
    def plain(self) -> str:
        """The line's text without styles, chunks separated by one space."""
        return " ".join(chunk for chunk, _style in self.chunks)

    def rich(self) -> Text:
        """The line as rich text, each chunk in its style."""
        from rich.text import Text

        text = Text()
        for i, (chunk, style) in enumerate(self.chunks):
            if i:
                text.append(" ")
            text.append(chunk, style=style)
        return text


def _line(mark: str, style: str, *parts: tuple[str, str]) -> Line:
    return Line([(mark, f"bold {style}"), *(part for part in parts if part[0])])


def _seconds(value: float) -> str:
    return f"{value:.1f}s"


def _pipeline_started(e: ev.PipelineStarted) -> Line:
    verb = "resuming" if e.resumed else "running"
    return _line("==", "cyan", (f"{verb} {e.name}", "bold"), (f"in {e.run_dir}", "dim"))


def _stage_started(e: ev.StageStarted) -> Line:
    handler = f"({e.handler})" if e.handler else ""
    attempt = f"attempt {e.attempt}" if e.attempt > 1 else ""
    return _line("->", "cyan", (e.name, "bold"), (handler, "dim"), (attempt, "yellow"))


def _stage_completed(e: ev.StageCompleted) -> Line:
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


def _stage_failed(e: ev.StageFailed) -> Line:
    retry = "(will retry)" if e.will_retry else ""
    return _line("!!", "red", (e.name, "bold"), ("failed:", "red"), (e.error, ""), (retry, "dim"))


def _stage_retrying(e: ev.StageRetrying) -> Line:
    return _line(
        "..", "yellow", (e.name, "bold"), (f"retrying in {_seconds(e.delay)}", "yellow"),
        (f"(attempt {e.attempt})", "dim"),
    )  # fmt: skip


def _parallel_started(e: ev.ParallelStarted) -> Line:
    return _line("=>", "cyan", (e.node, "bold"), (f"fans out to {e.branch_count} branches", ""))


def _branch_completed(e: ev.ParallelBranchCompleted) -> Line:
    mark, style = ("ok", "green") if e.success else ("!!", "red")
    outcome = "succeeded" if e.success else "failed"
    return _line(
        mark, style, (f"{e.node}/{e.branch}", "bold"), (f"branch {outcome}", style),
        (_seconds(e.duration), ""),
    )  # fmt: skip


def _parallel_completed(e: ev.ParallelCompleted) -> Line:
    counts = f"{e.success_count} succeeded, {e.failure_count} failed"
    return _line("<=", "cyan", (e.node, "bold"), ("joined:", ""), (counts, ""))


def _interview_started(e: ev.InterviewStarted) -> Line:
    return _line("??", "magenta", (e.stage, "bold"), (e.question, ""))


def _interview_completed(e: ev.InterviewCompleted) -> Line:
    who = f"(by {e.answered_by})" if e.answered_by else ""
    comment = f"- {e.comment}" if e.comment else ""
    return _line(
        "??", "magenta", ("answer:", ""), (e.answer, "bold"), (who, "dim"), (comment, "dim")
    )


def _interview_timeout(e: ev.InterviewTimeout) -> Line:
    return _line("??", "yellow", (e.stage, "bold"), ("no answer in time", "yellow"))


def _reflection(e: ev.AgentReflection) -> Line:
    return _line("~~", "magenta", (e.node, "bold"), (f"reflected at turn {e.turn}", ""))


def _agent_warning(e: ev.AgentWarning) -> Line:
    return _line("!!", "yellow", (e.node, "bold"), (e.message, "yellow"))


_FORMATTERS: dict[type[ev.Event], Callable[[Any], Line]] = {
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


def stage_line(event: ev.Event) -> Line | None:
    """The display line for ``event``, or None when it is not shown as a line."""
    formatter = _FORMATTERS.get(type(event))
    if formatter is None:
        return None
    return formatter(event)
