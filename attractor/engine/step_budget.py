"""The run-wide step budget: how many node executions one run may make.

A step is one node execution (its attempts and retries count as one; a node
entered again by a loop counts again), on the main path or in a parallel
branch. The budget bounds loops that no visit limit bounds: a run about to
take one step more than its limit ends as failed, naming the budget and where
it was set. Resolved in :mod:`attractor.settings` (``--max-steps``). A sub-pipeline's
child run takes its steps from its parent's budget; a resumed parent counts
the steps its children recorded (:func:`child_steps`).
"""

from __future__ import annotations

from attractor.dot.graph import Graph
from attractor.dot.includes import SUBGRAPH
from attractor.store.base import RunStore
from attractor.valueclass import mutable


@mutable
class StepBudget:
    """``limit`` steps for the whole run (None: unbounded); ``taken`` so far."""

    limit: int | None = None
    taken: int = 0
    #: Where the limit came from (``--max-steps``, ``default (...)``).
    source: str = "default"

    def take(self) -> bool:
        """Count one step; False (and nothing counted) once the budget is used up."""
        if self.limit is not None and self.taken >= self.limit:
            return False
        self.taken += 1
        return True

    def reason(self, node: str) -> str:
        """Why the run stops before ``node``: steps taken, the limit and its source."""
        return (
            f"run step budget exhausted: {self.taken:,} of {self.limit or 0:,} steps "
            f"taken before {node} ({self.source}); a loop that does not end is the usual "
            "cause: bound it with max_visits, or raise --max-steps"
        )


def child_steps(graph: Graph, store: RunStore) -> int:
    """The steps the sub-pipelines of ``graph`` recorded in ``store``: their child
    runs' summary rows (grandchildren's included)."""
    return store.child_steps(n.id for n in graph.nodes() if n.handler_type == SUBGRAPH)
