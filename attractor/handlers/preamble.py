"""The preamble of a stage that starts a fresh conversation: the run so far, in brief.

Built from the run's own record (finished stages, their notes and responses,
the context), never by asking a model, so it costs nothing and reads the same
on every run. Each mode has a size it never exceeds, in characters (about four
per token):

| mode | at most | carries |
|---|---|---|
| ``truncate`` | 400 | the goal and the run id |
| ``compact`` | 3,000 | one line per recent stage (status, note), key context values |
| ``summary:low`` | 2,400 | stage counts, the last stage and the start of its response |
| ``summary:medium`` | 6,000 | the last 10 stages, context values, the last response |
| ``summary:high`` | 12,000 | the last 30 stages (attempts, time, tokens), context values, |
|  |  | the last three responses |

A stage with nothing before it (only the start node ran) gets no preamble.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from weakref import WeakKeyDictionary

from attractor.dot.graph import Graph
from attractor.handlers.base import RunRecord, StageRecord
from attractor.handlers.context import Context
from attractor.valueclass import frozen


@frozen
class Shape:
    """How much of the run one mode shows."""

    limit: int
    stages: int
    context_values: int
    responses: int
    response_chars: int
    details: bool = False


SHAPES: dict[str, Shape] = {
    "truncate": Shape(400, 0, 0, 0, 0),
    "compact": Shape(3000, 20, 20, 0, 0),
    "summary:low": Shape(2400, 1, 0, 1, 600),
    "summary:medium": Shape(6000, 10, 30, 1, 1500),
    "summary:high": Shape(12000, 30, 60, 3, 2000, details=True),
}

_VALUE_CHARS = 160
_NOTE_CHARS = 200
#: Context keys the preamble leaves out: bookkeeping, and what it shows otherwise.
_HIDDEN_PREFIXES = ("internal.", "graph.", "parallel.results", "last_response")


def build(mode: str, *, graph: Graph, context: Context, record: RunRecord) -> str:
    """The preamble for ``mode``, or "" when no stage ran before (or mode is ``full``).

    Reads the record from its end and stops as soon as it has what the mode shows,
    so a stage late in a long run costs no more than one early in it.
    """
    shape = SHAPES.get(mode)
    done, failed, partial = record.tally()
    if shape is None or not done:
        return ""
    window = _window(record, graph, max(shape.stages, shape.responses * 4, 1))
    recent = window.found
    parts = [f"Goal: {graph.goal or '(none given)'}", f"Run: {record.run_id}"]
    if mode != "truncate":
        parts.append(f"Stages finished: {done} ({failed} failed, {partial} partial).")
        parts.extend(_stage_lines(recent, shape, window.lines))
        parts.extend(_context_lines(context, shape))
        parts.extend(_responses(recent, record, shape))
    body = "\n".join(parts)
    return _bounded(f"## Earlier in this run (context fidelity: {mode})\n\n{body}", shape.limit)


def counts_as_stage(stage: StageRecord, graph: Graph) -> bool:
    """Whether a finished node execution is a stage of the run (not start, not skipped)."""
    return stage.status != "skipped" and stage.node not in _start_ids(graph)


#: The start nodes of each graph a run asked about: the question comes for every
#: row of the record at every stage, and a node's handler type takes a schema lookup.
_STARTS: WeakKeyDictionary[Graph, frozenset[str]] = WeakKeyDictionary()


def _start_ids(graph: Graph) -> frozenset[str]:
    starts = _STARTS.get(graph)
    if starts is None:
        starts = frozenset(n.id for n in graph.nodes() if n.handler_type == "start")
        _STARTS[graph] = starts
    return starts


class _Window:
    """The last stages one size of preamble showed from a record, and their brief lines."""

    __slots__ = ("graph", "seen", "first", "last", "found", "lines")

    def __init__(
        self,
        graph: Graph,
        stages: Sequence[StageRecord],
        found: list[StageRecord],
        lines: list[str],
    ) -> None:
        self.graph = graph
        #: How many rows of the record were read, the first and the last of them (rows
        #: put before them, as a resumed branch's rows are, mean reading all again).
        self.seen = len(stages)
        self.first = stages[0] if stages else None
        self.last = stages[-1] if stages else None
        self.found = found
        self.lines = lines


#: Each record's windows, by size: a run adds a row or two between two stages, so
#: a preamble reads only the rows added since the last one and makes only their lines.
_WINDOWS: WeakKeyDictionary[RunRecord, dict[int, _Window]] = WeakKeyDictionary()


def _window(record: RunRecord, graph: Graph, n: int) -> _Window:
    """The last ``n`` stages of ``record`` (:func:`_recent`) and their brief lines."""
    stages = record.stages()
    try:
        windows = _WINDOWS.setdefault(record, {})
    except TypeError:  # a record that cannot be weakly referenced: nothing kept
        windows = {}
    known = windows.get(n)
    if (
        known is None
        or known.graph is not graph
        or known.seen > len(stages)
        or (known.seen and stages[known.seen - 1] is not known.last)
        or (known.seen and stages[0] is not known.first)
    ):
        found = _recent(stages, graph, n)
        lines = [_brief_line(s.node, s.status, s.note) for s in found]
    else:
        starts = _start_ids(graph)
        new = [s for s in stages[known.seen :] if s.status != "skipped" and s.node not in starts]
        new = new[-n:]
        found = (known.found + new)[-n:]
        lines = (known.lines + [_brief_line(s.node, s.status, s.note) for s in new])[-n:]
    window = windows[n] = _Window(graph, stages, found, lines)
    return window


def _recent(stages: Sequence[StageRecord], graph: Graph, n: int) -> list[StageRecord]:
    """The last ``n`` stages, oldest first, read from the end."""
    found: list[StageRecord] = []
    starts = _start_ids(graph)
    for stage in reversed(stages):
        if stage.status != "skipped" and stage.node not in starts:
            found.append(stage)
            if len(found) >= n:
                break
    return found[::-1]


def _stage_lines(stages: Sequence[StageRecord], shape: Shape, brief: list[str]) -> list[str]:
    """The lines of the last stages ``shape`` shows; ``brief``: each stage's brief line."""
    if not shape.stages:
        return []
    recent = stages[-shape.stages :]
    lines = ["", "Recent stages, oldest first:"]
    if not shape.details:
        lines += brief[-shape.stages :]
        return lines
    for stage in recent:
        tokens = sum((stage.usage or {}).values())
        details = f" ({stage.attempts} attempt(s), {stage.duration:.1f}s, {tokens} tokens)"
        lines.append(_brief_line(stage.node, stage.status, stage.note, details))
    return lines


#: Twice the most stage lines a mode shows: a line is built once while it stays in
#: view, and a long run does not keep the lines of stages long out of view.
_LINES_KEPT = 2 * max(shape.stages for shape in SHAPES.values())


@lru_cache(maxsize=_LINES_KEPT)
def _brief_line(node: str, status: str, note: str, details: str = "") -> str:
    """One stage's line (each stays in view for the next 20 or 30 stages: built once)."""
    line = f"- {node}: {status}{details}"
    return f"{line} - {_clip(note, _NOTE_CHARS)}" if note else line


def _context_lines(context: Context, shape: Shape) -> list[str]:
    if not shape.context_values:
        return []
    values = context.live_values()
    shown = [
        f"- {key} = {_clip(str(value), _VALUE_CHARS)}"
        for key, value in values.items()
        if not key.startswith(_HIDDEN_PREFIXES) and isinstance(value, str | int | float | bool)
    ]
    if not shown:
        return []
    return ["", "Context values:", *shown[: shape.context_values]]


def _responses(stages: Sequence[StageRecord], record: RunRecord, shape: Shape) -> list[str]:
    lines: list[str] = []
    seen: set[str] = set()
    for stage in reversed(stages):
        if len(seen) >= shape.responses:
            break
        if stage.node in seen:
            continue
        seen.add(stage.node)
        text = record.response(stage.node, shape.response_chars).strip()
        if text:
            lines += ["", f"Response of {stage.node}:", text]
    return lines


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    marker = "\n[... cut to the preamble's size]"
    return text[: limit - len(marker)] + marker
