"""A node's MCP servers handed to an ACP agent in ``session/new``.

ACP lets the client name MCP servers when it opens a session (``mcpServers``:
stdio servers as command, args and env; HTTP servers as url and headers); the
agent starts and talks to them itself. attractor hands over the servers the
node names (``mcp``, :mod:`attractor.handlers.mcp_servers`) with their
``${VAR}`` expanded: the values travel only inside the protocol message on the
agent's stdin, never on a command line or in a file, and are redacted from
what the run writes like every declared secret.

ACP has no way to choose among a server's tools, so ``mcp_allow``/``mcp_deny``
are honoured only whole: ``mcp_deny="mcp__NAME__*"`` leaves server NAME out;
any narrower pattern is refused before the run with a line that says so. An
HTTP server goes only to an agent that declares ``mcpCapabilities.http``.
Nothing here imports the ACP SDK (the pre-run checks work without it).
"""

from __future__ import annotations

from attractor.dot.graph import Node
from attractor.errors import UsageError
from attractor.handlers.acp.written import where_backend
from attractor.handlers.mcp_servers import node_servers
from attractor.mcp_config import McpServerConfig
from attractor.settings import Settings


def acp_servers(node: Node, settings: Settings) -> tuple[McpServerConfig, ...]:
    """The servers ``node``'s ACP agent gets, ``${VAR}`` not yet expanded.

    Raises:
        UsageError: an unknown server, or an allow/deny pattern ACP cannot honour.
    """
    found = node_servers(node, settings)
    if found is None:
        return ()
    whole = {name for name, pattern in found.deny if pattern == "*"}
    narrow = [(n, p) for n, p in (*found.allow, *found.deny) if n not in whole]
    if narrow:
        name, pattern = narrow[0]
        raise UsageError(
            f"{where_backend(node)}: mcp_allow/mcp_deny mcp__{name}__{pattern}: an ACP agent "
            "gets whole MCP servers (ACP cannot choose among a server's tools); drop the "
            f'pattern, or leave the server out with mcp_deny="mcp__{name}__*"'
        )
    return tuple(server for server in found.servers if server.name not in whole)


def expanded_servers(node: Node, settings: Settings) -> tuple[McpServerConfig, ...]:
    """:func:`acp_servers` with each ``${VAR}`` replaced by its value.

    Raises:
        UsageError: as :func:`acp_servers`, or a variable a server names is not set.
    """
    return tuple(server.expanded() for server in acp_servers(node, settings))


def check_acp_servers(node: Node, settings: Settings) -> None:
    """Before the run: what :func:`expanded_servers` would refuse, refused now."""
    expanded_servers(node, settings)
