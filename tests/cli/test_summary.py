"""The end-of-run summary: table rows, token totals and the final line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from attractor.cli.summary import (
    final_line,
    format_cost,
    format_tokens,
    print_summary,
    rich_table,
)
from attractor.engine.run import NodeResult, RunResult


def _result(status: str = "success", **kwargs: object) -> RunResult:
    fields: dict[str, object] = {
        "status": status,
        "run_dir": Path("runs") / "r1",
        "failure_reason": "",
        "current_node": "build",
        "node_results": [
            NodeResult("plan", "success", 1, 0.25, "[A] Approve", {"input_tokens": 1200}),
            NodeResult("build", "fail", 3, 75.0, "x" * 300, None),
        ],
        "usage": {"input_tokens": 1200, "output_tokens": 34},
        "timeout": 300.0,
    }
    fields.update(kwargs)
    return RunResult(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "line"),
    [
        ("success", "pipeline succeeded in 2.0s; run directory: runs/r1"),
        ("fail", "pipeline failed: build failed: boom; run directory: runs/r1"),
        (
            "timed_out",
            "pipeline timed out after 5m while running build; "
            "resume with: attractor resume runs/r1",
        ),
        (
            "interrupted",
            "pipeline interrupted while running build; resume with: attractor resume runs/r1",
        ),
        (
            "terminated",
            "pipeline terminated while running build; resume with: attractor resume runs/r1",
        ),
    ],
)
def test_final_line_per_status(status: str, line: str) -> None:
    reasons = {
        "fail": "build failed: boom",
        "timed_out": "pipeline timed out after 5m while running build",
        "interrupted": "pipeline interrupted while running build",
        "terminated": "pipeline terminated while running build",
    }
    result = _result(status, failure_reason=reasons.get(status, ""))
    assert final_line(result, 2.0) == line


def test_tokens_are_summed_in_and_out() -> None:
    assert format_tokens({"input_tokens": 1200, "output_tokens": 34}) == "1,200 in / 34 out"
    assert format_tokens({}) == ""
    assert format_tokens(None) == ""


def test_plain_summary_is_an_aligned_text_table_with_total_tokens() -> None:
    buffer = io.StringIO()
    print_summary(_result(), Console(file=buffer, width=80), rich=False)
    lines = buffer.getvalue().splitlines()
    assert lines[0].split() == [
        "node",
        "status",
        "attempts",
        "duration",
        "note",
        "tokens",
    ]  # no cost column: no node had a price
    assert lines[1].split()[:5] == ["plan", "success", "1", "0.2s", "[A]"]
    assert lines[1].endswith("1,200 in / 0 out")
    assert lines[2].split()[:4] == ["build", "fail", "3", "1m15s"]
    assert "x" * 57 + "..." in lines[2]
    assert lines[-1] == "tokens: 1,200 in / 34 out"


def test_rich_table_keeps_each_node_on_one_line_within_the_terminal() -> None:
    buffer = io.StringIO()
    rows = [
        ("plan", "success", "1", "0.2s", "[A] Approve", "1,200 in / 0 out", ""),
        ("build", "fail", "3", "1m15s", "y" * 120, "", ""),
    ]
    Console(file=buffer, width=80, force_terminal=True).print(rich_table(rows, 80))
    lines = Text.from_ansi(buffer.getvalue()).plain.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) == 4  # header, rule, two rows
    assert "[A] Approve" in lines[2]
    assert "tokens" in lines[0] and "cost" not in lines[0]
    assert "…" in lines[3]


def test_cost_and_cache_reads_show_per_node_and_in_the_total() -> None:
    usage = {"input_tokens": 2000, "output_tokens": 50, "cache_read_tokens": 1500, "cost": 0.0123}
    result = _result(node_results=[NodeResult("plan", "success", 1, 0.5, "", usage)], usage=usage)
    buffer = io.StringIO()
    print_summary(result, Console(file=buffer, width=120), rich=False)
    lines = buffer.getvalue().splitlines()
    assert lines[0].split()[-2:] == ["tokens", "cost"]
    assert lines[1].endswith("2,000 in (1,500 cached) / 50 out  $0.0123")
    assert lines[-1] == "tokens: 2,000 in (1,500 cached) / 50 out; cost: $0.0123"
    assert format_cost({"input_tokens": 5}) == ""
