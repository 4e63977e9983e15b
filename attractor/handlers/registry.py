"""Map handler type names to handlers; custom types can be registered.

Resolution order: the node's explicit ``type``, then the start or exit by id
(``start``, ``exit``, ``end``...), then the type of its shape, then the default
(codergen). An explicit type with no registered handler is an
error (the node fails) rather than a silent fallback to codergen.
"""

from __future__ import annotations

from collections.abc import Callable

from attractor.dot.graph import Node
from attractor.errors import RunError
from attractor.handlers.base import Handler
from attractor.linter.base import register_known_type


class HandlerRegistry:
    """Handlers by type name. Registering a type again replaces its handler.

    A type may be registered with a factory instead (:meth:`register_lazy`): its
    handler, and the modules it needs, are built when a node of that type first
    runs, so a run loads only the handlers its graph uses.
    """

    def __init__(self, default_type: str = "codergen") -> None:
        self._handlers: dict[str, Handler] = {}
        self._factories: dict[str, Callable[[], Handler]] = {}
        self.default_type = default_type

    def register(self, type_name: str, handler: Handler) -> None:
        self._handlers[type_name] = handler
        self._factories.pop(type_name, None)
        # Lint should not warn about a type that now has a handler.
        register_known_type(type_name)

    def register_lazy(self, type_name: str, factory: Callable[[], Handler]) -> None:
        """Register ``type_name`` with ``factory``, called once when first resolved."""
        self._handlers.pop(type_name, None)
        self._factories[type_name] = factory
        register_known_type(type_name)

    def types(self) -> list[str]:
        return sorted({*self._handlers, *self._factories})

    def __contains__(self, type_name: object) -> bool:
        return type_name in self._handlers or type_name in self._factories

    def resolve_type(self, node: Node) -> str:
        """The type name whose handler runs ``node``."""
        explicit = (node.raw("type") or "").strip()
        if explicit:
            if explicit in self:
                return explicit
            # Running an unknown type as codergen would silently call a model.
            raise RunError(
                f"node {node.id}: no handler is registered for type {explicit!r}; "
                f"known types: {', '.join(self.types())}"
            )
        by_shape = node.implied_type  # the start or exit by id, else by shape
        if by_shape is None:
            return self.default_type
        if by_shape not in self:
            # A supervisor (shape=house) run as an LLM step would only pretend.
            raise RunError(
                f"node {node.id}: shape={node.shape} means type {by_shape!r}, "
                "which has no registered handler"
            )
        return by_shape

    def resolve(self, node: Node) -> Handler:
        return self.handler(self.resolve_type(node), node)

    def handler(self, name: str, node: Node) -> Handler:
        """The handler of type ``name``, the :meth:`resolve_type` of ``node`` (built the
        first time a node of that type runs)."""
        handler = self._handlers.get(name)
        if handler is not None:
            return handler
        factory = self._factories.pop(name, None)
        if factory is None:
            raise RunError(f"node {node.id}: no handler for type {name!r}")
        handler = self._handlers[name] = factory()
        return handler
