"""The run so far as a stage may read it: the engine's side of ``RunRecord``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attractor.engine.state import NodeResult, Run
from attractor.errors import InputFileError
from attractor.fileio import read_head
from attractor.handlers.preamble import counts_as_stage


class EngineRecord:
    """Reads the summary rows and stage folders of whichever run is current.

    A ``loop_restart`` opens a new run directory; the record follows it, because
    it asks for the current :class:`Run` every time.
    """

    def __init__(self, current: Callable[[], Run]) -> None:
        self._current = current
        #: The run the tally counts, how many of its rows it has seen, and the counts.
        self._counted: tuple[Run | None, int] = (None, 0)
        self._tally = [0, 0, 0]

    @property
    def run_id(self) -> str:
        return self._current().run_dir.path.name

    def stages(self) -> Sequence[NodeResult]:
        return self._current().node_results

    def tally(self) -> tuple[int, int, int]:
        """Counted as rows arrive: each call looks only at the rows since the last one."""
        run = self._current()
        counted, seen = self._counted
        if counted is not run:
            seen, self._tally = 0, [0, 0, 0]
        rows = run.node_results
        for row in rows[seen:]:
            if counts_as_stage(row, run.graph):
                self._tally[0] += 1
                self._tally[1] += row.status == "fail"
                self._tally[2] += row.status == "partial_success"
        self._counted = (run, len(rows))
        done, failed, partial = self._tally
        return done, failed, partial

    def response(self, node_id: str, limit: int) -> str:
        run = self._current()
        if not run.graph.has_node(node_id):
            return ""
        path = run.run_dir.stage_dir(node_id) / "response.md"
        try:  # only the start: a response may be huge
            head = read_head(path, 4 * limit, "response file")
        except InputFileError:
            return ""
        return head.decode("utf-8", errors="replace")[:limit]
