"""The end of a run on the terminal: the summary table and the final line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attractor.dot.schema import format_duration
from attractor.run_status import STOPPED, RunStatus

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from attractor.launch import NodeResult, RunResult

_HEADERS = ("node", "status", "attempts", "duration", "note", "tokens", "cost")
_NOTE_WIDTH = 60


def format_tokens(usage: Mapping[str, Any] | None) -> str:
    """``1,200 in (900 cached) / 340 out``, or empty when the node used no model."""
    if not usage:
        return ""
    tokens_in = int(usage.get("input_tokens", 0))
    tokens_out = int(usage.get("output_tokens", 0))
    if not tokens_in and not tokens_out:
        return ""
    cached = int(usage.get("cache_read_tokens", 0))
    note = f" ({cached:,} cached)" if cached else ""
    return f"{tokens_in:,} in{note} / {tokens_out:,} out"


def format_cost(usage: Mapping[str, Any] | None) -> str:
    """``$0.0123``, or empty when no price is known."""
    cost = (usage or {}).get("cost")
    if not isinstance(cost, int | float) or isinstance(cost, bool):
        return ""
    return f"${cost:,.4f}"


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 60 else format_duration(round(value))


def _note(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _NOTE_WIDTH else line[: _NOTE_WIDTH - 3] + "..."


def summary_rows(results: Sequence[NodeResult]) -> list[tuple[str, ...]]:
    """One row of text cells per node result, in the order the nodes finished."""
    return [
        (
            r.node,
            r.status,
            str(r.attempts),
            _seconds(r.duration),
            _note(r.note),
            format_tokens(r.usage),
            format_cost(r.usage),
        )
        for r in results
    ]


def _columns(rows: Sequence[tuple[str, ...]]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Headers and rows, without the cost column when no node has a price."""
    if any(row[-1] for row in rows):
        return _HEADERS, list(rows)
    return _HEADERS[:-1], [row[:-1] for row in rows]


def plain_table(rows: Sequence[tuple[str, ...]]) -> str:
    """A left-aligned text table with no colour or box characters."""
    headers, rows = _columns(rows)
    grid = [headers, *rows]
    widths = [max(len(row[i]) for row in grid) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in grid]
    return "\n".join(line.rstrip() for line in lines)


def rich_table(rows: Sequence[tuple[str, ...]], width: int) -> Table:
    """The summary as a rich table for a ``width``-column terminal.

    Every column but the note keeps its full width; the note gets what is left
    and is cut with an ellipsis, so each node stays on one line.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    headers, rows = _columns(rows)
    note = headers.index("note")
    fixed = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers)) if i != note]
    # Each column has one space of padding either side and a one-space divider.
    note_width = max(len("note"), width - sum(fixed) - 3 * len(headers))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    for i, header in enumerate(headers):
        table.add_column(
            header,
            justify="right" if header in ("attempts", "duration", "cost") else "left",
            no_wrap=True,
            overflow="ellipsis",
            max_width=note_width if i == note else None,
            min_width=None if i == note else fixed[i if i < note else i - 1],
        )
    styles = {"success": "green", "partial_success": "yellow", "fail": "red", "stopped": "magenta"}
    for row in rows:
        # Text cells: a note like "[A] Approve" must not be read as rich markup.
        cells = [Text(cell) for cell in row]
        cells[1].stylize(styles.get(row[1], ""))
        table.add_row(*cells)
    return table


def print_summary(result: RunResult, console: Console, *, rich: bool) -> None:
    """Print the node table and the total token usage and cost to ``console``."""
    rows = summary_rows(result.node_results)
    lines = []
    if rows:
        if rich:
            console.print(rich_table(rows, console.width))
        else:
            # Plain text goes straight to the file: rich's rendering of a long
            # run's table cost as much as the run's own bookkeeping.
            lines.append(plain_table(rows))
    total = format_tokens(result.usage)
    cost = format_cost(result.usage)
    if total:
        lines.append(f"tokens: {total}" + (f"; cost: {cost}" if cost else ""))
    if not lines:
        return
    if rich:
        console.out(*lines, sep="\n", highlight=False)
    else:
        console.file.write("\n".join(lines) + "\n")
        console.file.flush()


def final_line(result: RunResult, elapsed: float) -> str:
    """The last line of every run; scripts may rely on its first words."""
    where = result.current_node or "no node"
    resume = f"resume with: attractor resume {result.run_dir}"
    if result.status == RunStatus.SUCCESS:
        return f"pipeline succeeded in {_seconds(elapsed)}; run directory: {result.run_dir}"
    if result.status in STOPPED:
        # The engine words the stop ("pipeline timed out after 5m while running
        # NODE"), echoing --timeout as the user typed it.
        stopped = result.failure_reason or f"pipeline {result.status} while running {where}"
        return f"{stopped}; {resume}"
    reason = result.failure_reason or "a node failed"
    return f"pipeline failed: {reason}; run directory: {result.run_dir}"


def workspace_lines(result: RunResult) -> list[str]:
    """What the run did to its files: branch, commits, files, and how to take the result."""
    data = result.workspace
    if data is None:
        return []
    if data.get("mode") == "none":
        return ["workspace: none: the files were not checkpointed (no diff, fork or restore)"]
    commits, files = data.get("commits", 0), data.get("files", 0)
    lines = [
        f"workspace: {data['mode']}, branch {data['branch']}: {commits} commit(s), "
        f"{files} file(s) changed; see them with attractor diff {result.run_dir}"
    ]
    taken = data.get("mode") == "worktree" and result.status == "success"
    if taken and data.get("uncommitted_start"):
        start = str(data["uncommitted_start"])[:12]
        lines += [
            f"the branch begins with commit {start}, the changes your checkout had uncommitted "
            f"when the run started: git merge {data['branch']} would refuse while your "
            "checkout still has them uncommitted",
            f"take the result on top of them: {data['take']} (or work on in {data['work_tree']})",
        ]
    elif taken and commits:
        # Nothing to take from a run that changed nothing, nor (yet) from one stopped.
        lines.append(
            f"take the result: git merge {data['branch']} (or work on in {data['work_tree']})"
        )
    return lines
