"""Continuing a run that ended: re-run its failed node, or go back to a chosen node.

Both build the state a resume starts from; the run directory keeps its whole
history (journal, events, results, node folders), and the manifest lists each
continuation.

- ``--retry-failed``: a failed run continues at the node that failed, with a
  fresh retry count; everything completed before it stays done.
- ``--from NODE``: the run goes back to the moment NODE was first entered (its
  context, completed nodes, visit and retry counters as they were then, rebuilt
  from ``journal.jsonl``); the nodes after it run again.
- ``attractor fork --from NODE`` (``fork``): the same state, for a new run whose
  history is the original's up to that moment only: what it spent, its turns and
  its rows of ``results.jsonl`` are those of that moment too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attractor.dot.graph import Graph
from attractor.engine.retry import visit_limit
from attractor.errors import UsageError
from attractor.run_status import RESUMABLE
from attractor.store.checkpoint import RUNNING, Checkpoint, apply_record
from attractor.store.journal import JOURNAL, read_records
from attractor.valueclass import frozen


@frozen
class Continuation:
    """How a resume continues a run: ``retry_failed``, or ``from_node`` (``fork``: in a
    new run that keeps only the history before ``from_node`` was first entered)."""

    retry_failed: bool = False
    from_node: str | None = None
    fork: bool = False

    def describe(self, node: str) -> str:
        if self.retry_failed:
            return f"continuing the failed run at {node} with a fresh retry count"
        if self.fork:
            return f"the fork starts at {node}, as the run was when {node} was first entered"
        return f"continuing the run from {node}, as it was when {node} was first entered"

    def to_json(self, node: str) -> dict[str, Any]:
        return {"how": "retry_failed" if self.retry_failed else "from", "node": node}


def continued(
    how: Continuation,
    checkpoint: Checkpoint,
    graph: Graph,
    run_dir: Path,
    initial: dict[str, Any],
) -> Checkpoint:
    """The checkpoint a continued run starts from (the latest one is not changed on disk).

    ``initial`` is the context the run started with (graph attributes, ``--set``).

    Raises:
        UsageError: no failed node to retry, or a node that is not in the
            pipeline or that the run never entered.
    """
    if how.retry_failed:
        return _retry_failed(checkpoint, graph, run_dir)
    node = how.from_node or ""
    _check_node(node, graph, "--from")
    state = _from_node(node, graph, run_dir, initial)
    if not how.fork:
        # What was spent stays spent, and the summary keeps every row written so far.
        state.run_turns_used = checkpoint.run_turns_used
        state.run_usage = checkpoint.run_usage
        state.node_results_count = checkpoint.node_results_count
        state.journal_seq = checkpoint.journal_seq
    return state


def _retry_failed(checkpoint: Checkpoint, graph: Graph, run_dir: Path) -> Checkpoint:
    if checkpoint.status != "fail":
        if checkpoint.status in RESUMABLE:
            instead = f"is {checkpoint.status}; resume it without --retry-failed"
        else:
            instead = (
                f"finished ({checkpoint.status}): nothing failed to run again; "
                "--from NODE goes back to NODE"
            )
        raise UsageError(
            f"{run_dir}: --retry-failed continues a failed run, and this one {instead}"
        )
    node = checkpoint.current_node or ""
    _check_node(node, graph, "the failed node")
    checkpoint.status = RUNNING
    checkpoint.next_node = node
    checkpoint.failure_reason = ""
    checkpoint.node_retries.pop(node, None)
    checkpoint.context[f"internal.retry_count.{node}"] = 0
    limit = visit_limit(graph.node(node), graph)
    if limit is not None and checkpoint.node_visits.get(node, 0) >= limit:
        # It used its visits (or failed by going over them): it gets them again.
        checkpoint.node_visits[node] = 0
    return checkpoint


def _from_node(node: str, graph: Graph, run_dir: Path, initial: dict[str, Any]) -> Checkpoint:
    """The state when ``node`` was first entered, replayed from the journal (its counts
    of turns, spending, result rows and journal records those of that moment)."""
    journal = run_dir / JOURNAL
    if not journal.exists():
        raise UsageError(
            f"{run_dir}: --from needs the run's journal.jsonl, which runs of an older "
            "attractor do not have; start a new run"
        )
    state = Checkpoint(context=dict(initial), next_node=_start(graph))
    entered = node == state.next_node
    for number, record in read_records(journal, 0, 0):
        if entered:
            break
        apply_record(state, record, journal, number)
        entered = record.get("next") == node
    if not entered:
        raise UsageError(
            f"--from {node}: the run never entered {node}, so there is no state to go back "
            "to; pick a node it ran (attractor status RUN_DIR lists them)"
        )
    state.status = RUNNING
    state.next_node = node
    return state


def _start(graph: Graph) -> str | None:
    start = graph.start_node()
    return start.id if start is not None else None


def _check_node(node: str, graph: Graph, what: str) -> None:
    if graph.has_node(node):
        return
    from difflib import get_close_matches

    close = get_close_matches(node, [n.id for n in graph.nodes()], n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else "; attractor status RUN_DIR lists the nodes"
    raise UsageError(f"{what} {node!r} is not a node of this run's pipeline{hint}")
