"""attractor: run multi-stage AI and coding-agent workflows written as DOT graphs.

The library API (the CLI is a thin layer over it)::

    import anyio, attractor

    diagnostics = attractor.lint("pipeline.dot")
    result = anyio.run(lambda: attractor.run("pipeline.dot", flags={"timeout": "5m"}))
    print(result.status, result.run_dir)
    svg = attractor.draw("pipeline.dot", run_dir=result.run_dir)   # bytes of an SVG picture

Imports are lazy so that ``attractor lint`` starts fast, and importing the package
does nothing else: the console script sets its stop-signal handlers first
(``cli/entry.py``), and the cache of compiled dataclass methods is installed by the
first module that declares one (``valueclass``).
"""

from __future__ import annotations

from attractor.version import __version__

# Not typing's own flag: importing typing costs milliseconds before the console
# script's signal handlers are set (type checkers read this name the same way).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["__version__", "draw", "lint", "load", "resume", "run"]


def __getattr__(name: str) -> Any:
    if name in ("draw", "lint", "load", "resume", "run"):
        from attractor import api

        return getattr(api, name)
    raise AttributeError(f"module 'attractor' has no attribute {name!r}")
