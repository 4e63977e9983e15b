"""attractor: run multi-stage AI and coding-agent workflows written as DOT graphs.

The library API (the CLI is a thin layer over it)::

    import anyio, attractor

    diagnostics = attractor.lint("pipeline.dot")
    result = anyio.run(lambda: attractor.run("pipeline.dot", flags={"timeout": "5m"}))
    print(result.status, result.run_dir)

Imports are lazy so that ``attractor lint`` starts fast.
"""

from __future__ import annotations

from typing import Any

from attractor.version import __version__

__all__ = ["__version__", "lint", "load", "resume", "run"]


def __getattr__(name: str) -> Any:
    if name in ("lint", "load", "resume", "run"):
        from attractor import api

        return getattr(api, name)
    raise AttributeError(f"module 'attractor' has no attribute {name!r}")
