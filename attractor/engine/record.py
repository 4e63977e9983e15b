"""The run so far as a stage may read it: the engine's side of ``RunRecord``."""

from __future__ import annotations

from collections.abc import Sequence

from attractor.dot.graph import Graph
from attractor.engine.state import NodeResult
from attractor.errors import InputFileError
from attractor.fileio.reads import read_head
from attractor.handlers.preamble import counts_as_stage
from attractor.store.base import RunStore


class EngineRecord:
    """Reads the summary rows and stage folders of one run directory.

    ``rows`` is the run's own list of summary rows (it grows as nodes end); a
    ``loop_restart`` opens a new run directory, which gets a record of its own.
    """

    def __init__(self, graph: Graph, store: RunStore, rows: list[NodeResult]) -> None:
        self._graph = graph
        self._store = store
        self._rows = rows
        #: How many rows the tally has counted, and the counts.
        self._seen = 0
        self._tally = [0, 0, 0]

    @property
    def run_id(self) -> str:
        return self._store.path.name

    def stages(self) -> Sequence[NodeResult]:
        return self._rows

    def tally(self) -> tuple[int, int, int]:
        """Counted as rows arrive: each call looks only at the rows since the last one."""
        for row in self._rows[self._seen :]:
            if counts_as_stage(row, self._graph):
                self._tally[0] += 1
                self._tally[1] += row.status == "fail"
                self._tally[2] += row.status == "partial_success"
        self._seen = len(self._rows)
        done, failed, partial = self._tally
        return done, failed, partial

    def response(self, node_id: str, limit: int) -> str:
        if not self._graph.has_node(node_id):
            return ""
        path = self._store.stage_dir(node_id) / "response.md"
        try:  # only the start: a response may be huge
            head = read_head(path, 4 * limit, "response file", follow=False)
        except InputFileError:
            return ""
        return head.decode("utf-8", errors="replace")[:limit]
