"""The simple handlers: start, exit and conditional (routing happens in the engine)."""

from __future__ import annotations

from attractor.dot.graph import Graph, Node
from attractor.handlers.base import StageEnv
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus


class StartHandler:
    """The entry point: succeeds at once."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        return Outcome.success()


class ExitHandler:
    """The exit point: succeeds at once; the engine checks goal gates before it runs."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        return Outcome.success("Pipeline completed")


#: Context keys the engine sets after every node, so a conditional node can
#: report which node's outcome it routes on (see engine.apply_outcome).
LAST_NODE_KEY = "internal.last_node"
LAST_REASON_KEY = "internal.last_failure_reason"


class ConditionalHandler:
    """A routing point: forwards the outcome of the node before it.

    The diamond exists to inspect what just happened, so ``outcome`` in the
    conditions of its edges means the status of the previous node: a failed
    validate makes the diamond FAIL too, and failure routing then takes the
    diamond's ``outcome!=success`` edge (see docs/engine.md).
    """

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        try:
            status = StageStatus(context.get_string("outcome", "success"))
        except ValueError:  # a --set outcome=... that is no status: nothing ran yet
            status = StageStatus.SUCCESS
        source = context.get_string(LAST_NODE_KEY) or "the previous node"
        note = f"routing on the outcome of {source}: {status.value}"
        if status != StageStatus.FAIL:
            return Outcome(status, notes=note)
        reason = context.get_string(LAST_REASON_KEY)
        return Outcome(status, notes=note, failure_reason=f"{note} ({reason})" if reason else note)
