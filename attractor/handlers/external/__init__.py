"""External coding-agent CLIs (Claude Code, Codex, Gemini CLI) as codergen backends.

One module per CLI holds its command line, its stream parser and its login
check (:mod:`.claude`, :mod:`.codex`, :mod:`.gemini`); the rest is shared:
:mod:`.runner` runs the CLI like a tool node's command, :mod:`.tracker` turns
its stream into attractor's events and files, :mod:`.backend` judges the
outcome, :mod:`.preflight` checks installation and login before a run, and
:mod:`.router` picks each node's backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attractor.handlers.external.router import route_backends

__all__ = ["route_backends"]


def __getattr__(name: str) -> Any:
    """The router's entry point, imported when first read: importing a submodule
    (say :mod:`.runner` for its file names) must not load every backend."""
    if name in __all__:
        from attractor.handlers.external import router

        return getattr(router, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
