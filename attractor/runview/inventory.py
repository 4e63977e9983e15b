"""One run's state read back from its files: every node, the route, the events.

Front ends (``attractor graph --run``, ``attractor serve``, ``attractor logs``)
read a run only through this module and :mod:`attractor.runview.listing` (the
listing fields, from the manifest), so that the files of a run directory are
interpreted in one place. The checkpoint gives a run's visits and context, and
``events.jsonl`` what each node is doing or did (so a run driven by another
process is read the same way); stage files are read in part.

Node states: ``pending``, ``running``, ``success``, ``partial``, ``fail``,
``skipped``, ``retry`` (the last attempt asked for another), and ``stopped``
(it was running when its run stopped).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from attractor.dot.graph import Graph
from attractor.errors import AttractorError, InputFileError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import (
    EVENTS_LIMIT,
    read_lines,
    read_tail,
)
from attractor.runview.listing import RunInfo, load_checkpoint, run_info
from attractor.store.checkpoint import RUNNING
from attractor.store.rundir import (
    EVENTS,
    RunDir,
    _safe_name,
)
from attractor.valueclass import mutable

#: Final event types: after one of these, a run's event stream has ended.
FINAL_EVENTS = frozenset(
    {"pipeline_completed", "pipeline_failed", "pipeline_timed_out", "pipeline_interrupted"}
)
_STATE_OF_STATUS = {"partial_success": "partial"}


@mutable
class NodeState:
    """One node as the run has seen it so far."""

    id: str
    state: str = "pending"
    visits: int = 0
    attempts: int = 0
    #: Seconds spent in the node over every visit.
    duration: float = 0.0
    notes: str = ""
    error: str = ""
    preferred_label: str = ""
    #: ``turn 3/10`` while an agent works in the node.
    turn: str = ""
    #: The tool call in progress (``shell: pytest -q``), empty when none.
    tool: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@mutable
class Progress:
    """Node ``index`` of ``total`` on the main path (start to exit, shortest)."""

    index: int
    total: int

    def to_json(self) -> dict[str, int]:
        return {"index": self.index, "total": self.total}


@mutable
class RunState:
    """One run read from its files: the listing fields plus every node."""

    info: RunInfo
    nodes: dict[str, NodeState] = field(default_factory=dict)
    #: The nodes in the order they started (first attempts only): the route taken.
    route: list[str] = field(default_factory=list)
    progress: Progress | None = None
    #: How many events events.jsonl holds (the id of the last one).
    event_count: int = 0
    pending_question: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            **self.info.to_json(),
            "nodes": {k: v.to_json() for k, v in self.nodes.items()},
            "route": self.route,
            "progress": self.progress.to_json() if self.progress else None,
            "event_count": self.event_count,
            "pending_question": self.pending_question,
        }


def read_events(path: Path, after: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(id, event)`` for each whole line of events.jsonl after event ``after``, streamed."""
    tail = EventTail(path, after)
    while batch := tail.read():
        yield from batch


class EventTail:
    """Reads a run's events.jsonl forward, each whole line once, from where it stopped.

    Ids count lines from 1, so they are the same for every reader (an SSE
    client reconnecting with Last-Event-ID gets the events after its last one).
    A line a crash cut short, or one still being written, waits for its end.
    """

    #: How many bytes one read takes (more to finish the last line).
    CHUNK = 4 * 1024 * 1024

    def __init__(self, path: Path, after: int = 0) -> None:
        self.path = RunDir(path).events_path
        self.after = after
        self.count = 0
        self._offset = 0
        #: Set once a line over the limit (or the whole file) ends what can be read.
        self._broken = False

    def read(self) -> list[tuple[int, dict[str, Any]]]:
        """The next events appended since the previous call, a chunk's worth at most.

        An empty list means there is nothing new (yet). A file that is not a
        regular file reads as empty; a line over :data:`~attractor.fileio.reads.LINE_LIMIT`,
        or a file over :data:`~attractor.fileio.reads.EVENTS_LIMIT`, reads as one
        ``unreadable`` event and nothing after it.
        """
        while lines := self._next_lines():
            found = []
            for raw in lines:
                self.count += 1
                if self.count > self.after:
                    found.append((self.count, _parse(raw)))
            if found:
                return found
        return []

    def _next_lines(self) -> list[bytes]:
        """The whole lines after the offset, about :attr:`CHUNK` bytes of them."""
        lines: list[bytes] = []
        if self._broken:
            return lines
        size = 0
        room = max(0, EVENTS_LIMIT - self._offset)
        try:
            for end, line in read_lines(
                self.path, "events file", offset=self._offset, total_limit=room
            ):
                lines.append(line)
                self._offset = end
                size += len(line) + 1
                if size >= self.CHUNK:
                    break
        except InputFileError as exc:
            if exc.kind == "too_large":
                self._broken = True
                lines.append(b"")  # one unreadable event says where the file went wrong
        return lines


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        event = loads_json(raw.decode("utf-8"), EVENTS, "event")
    except (ValueError, InputFileError):  # not JSON, not UTF-8, or nested too deeply
        return {"type": "unreadable"}
    return event if isinstance(event, dict) else {"type": "unreadable"}


def stage_path(path: Path, node_id: str) -> Path:
    """The stage folder of node ``node_id`` in the run directory ``path``."""
    return path / _safe_name(node_id)


def stage_files(path: Path, node_id: str, tail: int = 4000) -> dict[str, str]:
    """What a node left in its stage folder: each text file's last ``tail`` characters."""
    return folder_files(stage_path(path, node_id), tail)


def folder_files(folder: Path, tail: int = 4000) -> dict[str, str]:
    """The stage files in ``folder`` (a node's, or one attempt's moved aside); none
    when ``folder`` is a link (the files read are never followed out of the run)."""
    files: dict[str, str] = {}
    if folder.is_symlink():
        return files
    for name in _STAGE_FILES:
        text = tail_text(folder / name, tail)
        if text is not None:
            files[name] = text
    return files


_STAGE_FILES = (
    "prompt.md",
    "response.md",
    "status.json",
    "status.engine.json",
    "answer.json",
    "transcript.jsonl",
    "reflections.md",
    "stdout.txt",
    "stderr.txt",
)


def tail_text(path: Path, limit: int) -> str | None:
    """The last ``limit`` bytes of a regular file as text; None when there is none."""
    try:  # a FIFO or a device is refused, never waited on
        data, cut = read_tail(path, limit, "stage file", follow=False)
    except InputFileError:
        return None
    text = data.decode("utf-8", errors="replace")
    return "…" + text if cut else text


def last_line(path: Path) -> str:
    """The last non-empty line of a file (a tool's latest output), else ''."""
    text = tail_text(path, 2000) or ""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def run_state(path: Path, graph: Graph | None = None) -> RunState:
    """The state of the run in ``path``; ``graph`` (its pipeline) adds pending nodes
    and the progress along the main path."""
    return RunReader(path, graph).read()


class RunReader:
    """Reads one run's state again and again, parsing only the events added since.

    A server keeps one per run, so a status request on a long run costs the new
    events, not the whole of events.jsonl.
    """

    def __init__(self, path: Path, graph: Graph | None = None) -> None:
        self.path = path
        self.graph = graph
        self._tail = EventTail(path)
        self._fold = _Fold(RunState(info=run_info(path)))
        if graph is not None:
            self._fold.state.nodes = {node.id: NodeState(node.id) for node in graph.nodes()}
        self._main_path = main_path(graph) if graph is not None else []

    def read(self) -> RunState:
        """The run as its files say now."""
        folded = self._fold.state
        while batch := self._tail.read():
            for number, event in batch:
                self._fold.apply(event)
                folded.event_count = number
        info = run_info(self.path)
        live = info.status == RUNNING
        state = RunState(
            info=info,
            nodes={k: dataclasses.replace(v) for k, v in folded.nodes.items()},
            route=list(folded.route),
            event_count=folded.event_count,
            pending_question=folded.pending_question if live else "",
        )
        for node in state.nodes.values():
            if node.state == "running" and not live:
                node.state = "stopped"
            if not live:
                node.turn = node.tool = ""
        checkpoint = load_checkpoint(self.path)
        if checkpoint is not None:
            for node_id, count in checkpoint.node_visits.items():
                node = state.nodes.setdefault(node_id, NodeState(node_id))
                node.visits = max(count, node.visits)
        if self.graph is not None:
            state.progress = progress(self._main_path, state.route)
        return state


class _Fold:
    """Applies events, in order, to the node states of a :class:`RunState`."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def node(self, node_id: str) -> NodeState:
        return self.state.nodes.setdefault(node_id, NodeState(node_id))

    def apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            with contextlib.suppress(KeyError, TypeError, ValueError):
                handler(event)

    def _on_stage_started(self, e: dict[str, Any]) -> None:
        node = self.node(str(e["name"]))
        node.state, node.error, node.turn, node.tool = "running", "", "", ""
        node.attempts = int(e.get("attempt", 1))
        visit = e.get("visit")
        if not isinstance(visit, int) or isinstance(visit, bool) or visit < 1:
            # Events written before they named their visit: count first attempts.
            visit = node.visits + 1 if node.attempts == 1 else node.visits
        # An attempt cut short by a stop starts again on resume as the same visit.
        if visit > node.visits:
            node.visits = visit
            self.state.route.append(node.id)

    def _on_stage_completed(self, e: dict[str, Any]) -> None:
        node = self.node(str(e["name"]))
        status = str(e.get("status", "success"))
        node.state = _STATE_OF_STATUS.get(status, status)
        node.duration += float(e.get("duration", 0.0))
        node.notes = str(e.get("notes", ""))
        node.preferred_label = str(e.get("preferred_label", ""))
        node.turn = node.tool = ""

    def _on_stage_failed(self, e: dict[str, Any]) -> None:
        node = self.node(str(e["name"]))
        node.error = str(e.get("error", ""))
        if not e.get("will_retry"):
            node.state, node.turn, node.tool = "fail", "", ""

    def _on_agent_turn_started(self, e: dict[str, Any]) -> None:
        self.node(str(e["node"])).turn = f"turn {e['turn']}/{e['max_turns']}"

    def _on_tool_call_started(self, e: dict[str, Any]) -> None:
        self.node(str(e["node"])).tool = f"{e['tool']}: {e.get('summary', '')}".rstrip(": ")

    def _on_tool_call_completed(self, e: dict[str, Any]) -> None:
        self.node(str(e["node"])).tool = ""

    def _on_interview_started(self, e: dict[str, Any]) -> None:
        self.state.pending_question = str(e.get("question", ""))

    def _on_interview_completed(self, e: dict[str, Any]) -> None:
        self.state.pending_question = ""

    _on_interview_timeout = _on_interview_completed


def run_graph(path: Path) -> Graph | None:
    """The run's copy of its pipeline, parsed and transformed; None when unusable."""
    from attractor.linter.prepare import prepare

    try:
        graph, _ = prepare(RunDir(path).pipeline_path)
    except AttractorError:
        return None
    return graph


def main_path(graph: Graph) -> list[str]:
    """The shortest route from the start node to an exit (edges in file order)."""
    start = graph.start_node()
    if start is None:
        return []
    exits = graph.exit_ids()
    previous: dict[str, str | None] = {start.id: None}
    queue = deque([start.id])
    while queue:
        current = queue.popleft()
        if current in exits:
            return _walk_back(previous, current)
        for edge in graph.outgoing(current):
            if edge.target not in previous:
                previous[edge.target] = current
                queue.append(edge.target)
    return [start.id]


def _walk_back(previous: dict[str, str | None], last: str) -> list[str]:
    path: list[str] = []
    node: str | None = last
    while node is not None:
        path.append(node)
        node = previous[node]
    return path[::-1]


def progress(path: list[str], route: Iterable[str]) -> Progress:
    """How far along ``path`` the run has got: the furthest of its nodes reached."""
    position = {node: i for i, node in enumerate(path, start=1)}
    reached = max((position.get(node, 0) for node in route), default=0)
    return Progress(reached, len(path))
