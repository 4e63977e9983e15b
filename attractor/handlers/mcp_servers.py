"""Which MCP servers a node's agent gets: its ``mcp`` attribute and the config's servers.

A node names servers with ``mcp="NAME[,NAME...]"`` (its own value wins, even
empty; else the graph's), each defined by a ``[mcp_servers.NAME]`` table of the
config file (:mod:`attractor.mcp_config`). ``mcp_allow`` and ``mcp_deny``
(``mcp__NAME__TOOL`` globs) choose among their tools. Servers are started per
step: each attempt of a node starts its own and stops them when it ends.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable

from attractor.dot.graph import Node
from attractor.dot.schema import parse_mcp_servers, parse_mcp_tools
from attractor.errors import UsageError
from attractor.mcp_config import McpServerConfig
from attractor.settings import Settings
from attractor.valueclass import frozen

Patterns = tuple[tuple[str, str], ...]


def _own_or_graph(node: Node, key: str) -> str:
    own = node.raw(key)
    return (own if own is not None else node.graph.raw(key) or "").strip()


@frozen
class NodeServers:
    """A node's servers as the config defines them, and its allow and deny lists."""

    servers: tuple[McpServerConfig, ...]
    allow: Patterns = ()
    deny: Patterns = ()


def server_names(node: Node) -> tuple[str, ...]:
    """The MCP servers ``node`` names (its ``mcp``, else the graph's)."""
    try:
        return parse_mcp_servers(_own_or_graph(node, "mcp"))
    except ValueError:
        return ()  # lint reports it; a run never starts with it


def node_servers(node: Node, settings: Settings) -> NodeServers | None:
    """The node's servers, None when it names none.

    Raises:
        UsageError: a name no ``[mcp_servers.NAME]`` table defines.
    """
    names = server_names(node)
    if not names:
        return None
    servers = []
    for name in names:
        config = settings.mcp_servers.get(name)
        if config is None:
            raise UsageError(unknown_server(node, name, settings))
        servers.append(config)
    return NodeServers(
        tuple(servers),
        parse_mcp_tools(_own_or_graph(node, "mcp_allow")),
        parse_mcp_tools(_own_or_graph(node, "mcp_deny")),
    )


def unknown_server(node: Node, name: str, settings: Settings) -> str:
    pos = node.pos_of("mcp") or node.graph.pos_of("mcp") or node.pos
    where = f"{pos.file}:{pos.line}: " if pos.file else ""
    known = ", ".join(sorted(settings.mcp_servers)) or "none"
    source = settings.source("mcp_servers")
    config = source.rsplit(": ", 1)[0] if source != "default" else "the config file (none found)"
    return (
        f"{where}node {node.id} names MCP server {name!r}, which {config} does not "
        f"define (defined: {known}); add a [mcp_servers.{name}] table to attractor.toml"
    )


def check_servers(nodes: Iterable[Node], settings: Settings, *, sdk: bool = True) -> None:
    """Before the run: every server the agent ``nodes`` name is defined, its variables
    set, and (``sdk``: the built-in agent runs them) the MCP SDK installed.

    Raises:
        UsageError: the first problem, naming the file and line, or the extra to install.
    """
    used = False
    for node in nodes:
        found = node_servers(node, settings)
        if found is None:
            continue
        used = True
        for server in found.servers:
            server.expanded()
            _check_command(node, server)
    if used and sdk:
        require_sdk()


def _check_command(node: Node, server: McpServerConfig) -> None:
    """A stdio server's program, named without a folder, is on PATH (as an ACP agent's)."""
    command = server.command
    if command is None or "/" in command or shutil.which(command) is not None:
        return
    pos = node.pos_of("mcp") or node.graph.pos_of("mcp") or node.pos
    where = f"{pos.file}:{pos.line}: " if pos.file else ""
    raise UsageError(
        f"{where}node {node.id}: MCP server {server.name!r} runs {command!r}, which is not "
        f"on PATH; install it or fix command in {server.source or 'the config file'}"
    )


def require_sdk() -> None:
    """Raise a UsageError naming the extra when the ``mcp`` SDK is not installed."""
    from attractor.agent.mcp import SDK_MISSING

    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UsageError(SDK_MISSING) from None


def describe_servers(node: Node, settings: Settings) -> str | None:
    """One line for ``--dry-run``: the node's servers, or None when it names none."""
    names = server_names(node)
    if not names:
        return None
    shown = []
    for name in names:
        config = settings.mcp_servers.get(name)
        shown.append(config.describe() if config is not None else f"{name} (not defined)")
    line = ", ".join(shown)
    allow = _own_or_graph(node, "mcp_allow")
    deny = _own_or_graph(node, "mcp_deny")
    if allow:
        line += f"; allow {allow}"
    if deny:
        line += f"; deny {deny}"
    return line + "; started with each attempt of the node"
