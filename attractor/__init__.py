"""attractor: run multi-stage AI and coding-agent workflows written as DOT graphs.

The library API (the CLI is a thin layer over it)::

    import anyio, attractor

    diagnostics = attractor.lint("pipeline.dot")
    result = anyio.run(lambda: attractor.run("pipeline.dot", flags={"timeout": "5m"}))
    print(result.status, result.run_dir)
    svg = attractor.draw("pipeline.dot", run_dir=result.run_dir)   # bytes of an SVG picture

Imports are lazy so that ``attractor lint`` starts fast.
"""

from __future__ import annotations

from typing import Any

from attractor import methodcache
from attractor.version import __version__

methodcache.install()

__all__ = ["__version__", "draw", "lint", "load", "resume", "run"]


def __getattr__(name: str) -> Any:
    if name in ("draw", "lint", "load", "resume", "run"):
        from attractor import api

        return getattr(api, name)
    raise AttributeError(f"module 'attractor' has no attribute {name!r}")
