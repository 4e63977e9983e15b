"""attractor: run multi-stage AI and coding-agent workflows written as DOT graphs."""

from __future__ import annotations

__version__ = "0.1.0"
