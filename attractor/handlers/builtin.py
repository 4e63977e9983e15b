"""Every built-in handler type, and the registry that holds them all."""

from __future__ import annotations

from attractor.handlers.base import Handler
from attractor.handlers.codergen import CodergenHandler
from attractor.handlers.registry import HandlerRegistry
from attractor.handlers.simple import ConditionalHandler, ExitHandler, StartHandler


def register_builtins(registry: HandlerRegistry) -> None:
    registry.register("start", StartHandler())
    registry.register("exit", ExitHandler())
    registry.register("conditional", ConditionalHandler())
    registry.register("codergen", CodergenHandler())
    # The rest are built when a node of their type first runs (see HandlerRegistry).
    registry.register_lazy("wait.human", _human)
    registry.register_lazy("parallel", _parallel)
    registry.register_lazy("parallel.fan_in", _fan_in)
    registry.register_lazy("tool", _tool)
    registry.register_lazy("stack.manager_loop", _manager)
    registry.register_lazy("subgraph", _sub_pipeline)


def _human() -> Handler:
    from attractor.handlers.human import WaitForHumanHandler

    return WaitForHumanHandler()


def _parallel() -> Handler:
    from attractor.handlers.parallel import ParallelHandler

    return ParallelHandler()


def _fan_in() -> Handler:
    from attractor.handlers.fan_in import FanInHandler

    return FanInHandler()


def _tool() -> Handler:
    from attractor.handlers.tool import ToolHandler

    return ToolHandler()


def _manager() -> Handler:
    from attractor.handlers.manager import ManagerLoopHandler

    return ManagerLoopHandler()


def _sub_pipeline() -> Handler:
    from attractor.handlers.sub_pipeline import SubPipelineHandler

    return SubPipelineHandler()


def default_registry() -> HandlerRegistry:
    """A registry with every built-in handler."""
    registry = HandlerRegistry()
    register_builtins(registry)
    return registry
