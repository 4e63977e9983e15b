"""MCP servers' tools for the coding agent (the ``mcp`` extra; see docs/agent.md).

:mod:`~attractor.agent.mcp.toolset` opens a step's servers and offers their tools
as ``mcp__NAME__TOOL``; :mod:`~attractor.agent.mcp.stdio` talks to a server that
runs as a process of the step. Nothing here imports the ``mcp`` SDK until a step
names a server.
"""

from __future__ import annotations

#: What to do when the SDK is missing (the CLI prints it as one line).
SDK_MISSING = "MCP support needs the mcp extra: pip install 'attractor[mcp]'"
