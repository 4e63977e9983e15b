"""Register every built-in handler type."""

from __future__ import annotations

from attractor.pipeline.handlers.codergen import CodergenHandler
from attractor.pipeline.handlers.human import WaitForHumanHandler
from attractor.pipeline.handlers.parallel import FanInHandler, ParallelHandler
from attractor.pipeline.handlers.registry import HandlerRegistry
from attractor.pipeline.handlers.simple import ConditionalHandler, ExitHandler, StartHandler
from attractor.pipeline.handlers.tool import ToolHandler


def register_builtins(registry: HandlerRegistry) -> None:
    registry.register("start", StartHandler())
    registry.register("exit", ExitHandler())
    registry.register("conditional", ConditionalHandler())
    registry.register("codergen", CodergenHandler())
    registry.register("wait.human", WaitForHumanHandler())
    registry.register("parallel", ParallelHandler())
    registry.register("parallel.fan_in", FanInHandler())
    registry.register("tool", ToolHandler())
