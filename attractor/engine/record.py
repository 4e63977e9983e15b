"""The run so far as a stage may read it: the engine's side of ``RunRecord``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attractor.engine.state import NodeResult, Run


class EngineRecord:
    """Reads the summary rows and stage folders of whichever run is current.

    A ``loop_restart`` opens a new run directory; the record follows it, because
    it asks for the current :class:`Run` every time.
    """

    def __init__(self, current: Callable[[], Run]) -> None:
        self._current = current

    @property
    def run_id(self) -> str:
        return self._current().run_dir.path.name

    def stages(self) -> Sequence[NodeResult]:
        return self._current().node_results

    def response(self, node_id: str, limit: int) -> str:
        run = self._current()
        if not run.graph.has_node(node_id):
            return ""
        path = run.run_dir.stage_dir(node_id) / "response.md"
        try:
            with path.open("rb") as fh:  # only the start: a response may be huge
                head = fh.read(4 * limit)
        except OSError:
            return ""
        return head.decode("utf-8", errors="replace")[:limit]
