"""The no-op handlers: start, exit and conditional (routing happens in the engine)."""

from __future__ import annotations

from attractor.pipeline.context import Context
from attractor.pipeline.graph import Graph, Node
from attractor.pipeline.handlers.base import StageEnv
from attractor.pipeline.outcome import Outcome


class StartHandler:
    """The entry point: succeeds at once."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        return Outcome.success()


class ExitHandler:
    """The exit point: succeeds at once; the engine checks goal gates before it runs."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        return Outcome.success("Pipeline completed")


class ConditionalHandler:
    """A routing point: succeeds; the engine evaluates the outgoing edge conditions."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        return Outcome.success(f"Conditional node evaluated: {node.id}")
