"""The ``mcp`` rule: a node's MCP servers and its allow and deny lists agree.

The values themselves (server names, ``mcp__NAME__TOOL`` patterns) are checked
by ``attribute_value``; this rule checks what the values alone cannot show.
Whether each name has a ``[mcp_servers.NAME]`` table is a question for the
config file, not the graph: :func:`unknown_servers` answers it for
``attractor lint`` (with the config it finds) and the run checks it again
before it starts.
"""

from __future__ import annotations

from collections.abc import Collection

from attractor.dot.graph import Graph, Node
from attractor.dot.schema import parse_mcp_servers, parse_mcp_tools
from attractor.errors import Diagnostic
from attractor.linter.base import at, facts, rule_list

RULES, rule = rule_list()

_KEYS = ("mcp", "mcp_allow", "mcp_deny")


def _value(node: Node, key: str) -> tuple[str, Node | Graph]:
    """The value in force and where it is written (the node, else the graph)."""
    own = node.raw(key)
    if own is not None:
        return own, node
    return node.graph.raw(key) or "", node.graph


def _servers(node: Node) -> tuple[str, ...]:
    try:
        return parse_mcp_servers(_value(node, "mcp")[0])
    except ValueError:
        return ()


@rule("mcp", "error", "warning")
def mcp(graph: Graph) -> list[Diagnostic]:
    """``mcp_allow``/``mcp_deny`` name servers of the node's ``mcp``; ``mcp`` sits on LLM nodes.

    An entry ``mcp__NAME__TOOL`` of ``mcp_allow`` or ``mcp_deny`` whose NAME is not
    among the node's servers (its ``mcp``, else the graph's) can never match: an
    error. ``mcp`` on a node that is not an LLM node has no effect: a warning.
    """
    known = facts(graph)
    found: list[Diagnostic] = []
    for node in known.nodes:
        if known.types[node.id] != "codergen":
            if any(key in node.attrs for key in _KEYS):
                key = next(key for key in _KEYS if key in node.attrs)
                message = f"{key} on {node.id} has no effect: only LLM nodes run an agent"
                found.append(at("mcp", "warning", node, message, key=key, fix=f"remove {key}"))
            continue
        found += _lists(node)
    return found


def _lists(node: Node) -> list[Diagnostic]:
    if "mcp_allow" not in node.attrs and "mcp_deny" not in node.attrs:
        return []  # only a node's own lists are checked here (see below)
    servers = _servers(node)
    found: list[Diagnostic] = []
    for key in ("mcp_allow", "mcp_deny"):
        raw, where = _value(node, key)
        if where is not node or not raw:
            continue  # a graph's list is checked against each node's servers at run time
        try:
            entries = parse_mcp_tools(raw)
        except ValueError:
            continue  # attribute_value reports it
        for server, pattern in entries:
            if server not in servers:
                named = ", ".join(servers) or "none"
                message = (
                    f"{key} of {node.id} names mcp__{server}__{pattern}, but {server} is not "
                    f"one of its MCP servers (mcp: {named})"
                )
                fix = f'add {server} to mcp="..." or remove the entry'
                found.append(at("mcp", "error", node, message, key=key, fix=fix))
    return found


def unknown_servers(graph: Graph, defined: Collection[str], config: str | None) -> list[Diagnostic]:
    """An error for each server an LLM node names that ``config`` does not define
    (``config`` None: no config file was found)."""
    found: list[Diagnostic] = []
    reported: set[tuple[str, int, str]] = set()
    for node in graph.nodes():
        if node.handler_type != "codergen":
            continue
        _, where = _value(node, "mcp")
        for name in _servers(node):
            pos = where.pos_of("mcp") or where.pos
            mark = (pos.file, pos.line, name)
            if name in defined or mark in reported:
                continue
            reported.add(mark)
            listed = ", ".join(sorted(defined)) or "none"
            if config is None:
                message = (
                    f"MCP server {name!r} (on {node.id}) is not defined: no config file "
                    "here (attractor.toml, or [tool.attractor] in pyproject.toml)"
                )
            else:
                message = (
                    f"MCP server {name!r} (on {node.id}) is not defined in {config} "
                    f"(defined: {listed})"
                )
            fix = (
                f'add [mcp_servers.{name}] with command = "..." or url = "..." '
                f"to {config or 'attractor.toml'}"
            )
            found.append(at("mcp", "error", where, message, key="mcp", fix=fix))
    return found
