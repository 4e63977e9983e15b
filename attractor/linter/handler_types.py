"""Whether handler types can still be registered: the command line closes them.

Kept apart from ``linter.base`` (which needs the graph model) so that the
command group can close them for every command without importing the linter.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: True where no handler can be registered (the command line): an unknown
#: ``type`` is then an error, not a warning.
_TYPES_CLOSED: ContextVar[bool] = ContextVar("attractor_handler_types_closed", default=False)


@contextmanager
def closed_handler_types() -> Iterator[None]:
    """Inside this block no code registers handler types: ``type_known`` reports errors.

    The command line enters it for every command. A program using the library
    stays outside it, since it may register a handler for a type before it runs
    the pipeline (:meth:`attractor.handlers.registry.HandlerRegistry.register`).
    """
    token = _TYPES_CLOSED.set(True)
    try:
        yield
    finally:
        _TYPES_CLOSED.reset(token)


def handler_types_closed() -> bool:
    """Whether an unknown handler type can never get a handler here (see above)."""
    return _TYPES_CLOSED.get()
