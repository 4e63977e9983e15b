"""Every built-in handler type, and the registry that holds them all."""

from __future__ import annotations

from attractor.handlers.codergen import CodergenHandler
from attractor.handlers.fan_in import FanInHandler
from attractor.handlers.human import WaitForHumanHandler
from attractor.handlers.manager import ManagerLoopHandler
from attractor.handlers.parallel import ParallelHandler
from attractor.handlers.registry import HandlerRegistry
from attractor.handlers.simple import ConditionalHandler, ExitHandler, StartHandler
from attractor.handlers.sub_pipeline import SubPipelineHandler
from attractor.handlers.tool import ToolHandler


def register_builtins(registry: HandlerRegistry) -> None:
    registry.register("start", StartHandler())
    registry.register("exit", ExitHandler())
    registry.register("conditional", ConditionalHandler())
    registry.register("codergen", CodergenHandler())
    registry.register("wait.human", WaitForHumanHandler())
    registry.register("parallel", ParallelHandler())
    registry.register("parallel.fan_in", FanInHandler())
    registry.register("tool", ToolHandler())
    registry.register("stack.manager_loop", ManagerLoopHandler())
    registry.register("subgraph", SubPipelineHandler())


def default_registry() -> HandlerRegistry:
    """A registry with every built-in handler."""
    registry = HandlerRegistry()
    register_builtins(registry)
    return registry
