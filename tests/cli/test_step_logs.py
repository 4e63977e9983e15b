"""The lines ``attractor logs`` makes of a run's events, and its ANSI handling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attractor.cli.step_logs import LogPrinter, clean


def _printed(tmp_path: Path, events: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    printer = LogPrinter(tmp_path, out.append)
    for event in events:
        printer.event(event)
    printer.finish()
    return "".join(out).splitlines()


START = {"type": "stage_started", "name": "work", "handler": "codergen", "visit": 1, "attempt": 1}


def _done(command: str, output: str) -> dict[str, Any]:
    return {
        "type": "tool_call_completed",
        "node": "work",
        "tool": "shell",
        "arguments": {"command": command},
        "output": output,
        "is_error": False,
    }


def test_a_call_reported_only_when_done_is_named_before_its_result(tmp_path: Path) -> None:
    # Agent CLIs report a call once it is done: no tool_call_started came before.
    lines = _printed(tmp_path, [START, _done("make test", "ok")])
    assert lines == ["==> work (codergen), visit 1, attempt 1", "< shell: make test", "  ok"]


def test_calls_side_by_side_each_name_their_result(tmp_path: Path) -> None:
    started = [
        {"type": "tool_call_started", "node": "work", "tool": "shell", "summary": cmd}
        for cmd in ("ls a", "ls b")
    ]
    lines = _printed(tmp_path, [START, *started, _done("ls a", "x"), _done("ls b", "y")])
    assert lines[1:] == [
        "> shell: ls a",
        "> shell: ls b",
        "< shell: ls a",
        "  x",
        "< shell: ls b",
        "  y",
    ]


def test_one_call_right_after_its_start_is_not_named_twice(tmp_path: Path) -> None:
    started = {"type": "tool_call_started", "node": "work", "tool": "shell", "summary": "ls"}
    lines = _printed(tmp_path, [START, started, _done("ls", "x")])
    assert lines[1:] == ["> shell: ls", "  x"]


def test_ansi_escapes_stripped_coloured_or_kept() -> None:
    text = "\x1b]0;title\x07\x1b[2K\x1b[1;31mred\x1b[0m plain\n"
    assert clean(text, "strip") == "red plain\n"
    assert clean(text, "colours") == "\x1b[1;31mred\x1b[0m plain\n"
    assert clean(text, "raw") == text
