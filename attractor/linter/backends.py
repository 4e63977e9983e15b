"""The ``backend`` attribute: where it has an effect, and what an agent CLI ignores.

Its values are checked by ``attribute_value`` (the schema lists them); this rule
adds what a value alone cannot show: a ``backend`` on a node that is not an LLM
node, and attributes of an LLM node that an agent CLI (Claude Code, Codex,
Gemini CLI) or an ACP agent (``acp:NAME``) does not honour. Whether NAME is
configured is checked by :mod:`attractor.linter.acp`.
"""

from __future__ import annotations

from attractor.dot.graph import Graph, Node, SourcePos
from attractor.dot.schema import AGENT_BACKENDS, is_acp_backend, parse_mcp_tools
from attractor.errors import Diagnostic
from attractor.linter.base import at, facts, rule_list

RULES, rule = rule_list()

#: Node attributes an agent CLI cannot honour, and why.
_IGNORED_BY_AGENTS = {
    "sprint_limit": "forced reflections are part of the built-in agent loop",
    "tool_hooks.pre": "hooks run around the built-in agent's tool calls only",
    "tool_hooks.post": "hooks run around the built-in agent's tool calls only",
}


def _agent_of(node: Node, graph: Graph) -> str | None:
    """The agent CLI the graph gives this node, if any (run settings aside)."""
    name = (node.raw("backend") or graph.raw("backend") or "").strip()
    return name if name in AGENT_BACKENDS or is_acp_backend(name) else None


def _in_force(node: Node, key: str) -> bool:
    """The node has ``key`` set to something that acts (its own value, else the graph's)."""
    graph_key = "default_sprint_limit" if key == "sprint_limit" else key
    value = node.raw(key)
    if value is None:
        value = node.graph.raw(graph_key)
    return bool(value and value.strip() and value.strip() != "0")


@rule("backend", "warning", "error")
def backend(graph: Graph) -> list[Diagnostic]:
    """``backend`` sits on LLM nodes; agent-CLI nodes carry nothing the CLI ignores.

    ``backend="acp:NAME"`` must name an ``[acp_agents.NAME]`` table of the
    config file a run in this directory reads (an error otherwise;
    ``attractor lint`` checks it, the editor's language server does not).
    """
    known = facts(graph)
    found: list[Diagnostic] = []
    llm = [node for node in known.nodes if known.types[node.id] == "codergen"]
    # A ``node [backend=...]`` default that also reaches LLM nodes is fine.
    reported: set[SourcePos | None] = {node.pos_of("backend") for node in llm}
    llm_ids = {node.id for node in llm}
    for node in known.nodes:
        pos = node.pos_of("backend")
        if node.id not in llm_ids and "backend" in node.attrs and pos not in reported:
            reported.add(pos)
            kind = known.types[node.id]
            message = (
                f"backend on {node.id} has no effect: only LLM nodes have one ({node.id} is {kind})"
            )
            fix = f"remove backend from {node.id}"
            found.append(at("backend", "warning", node, message, key="backend", fix=fix))
    for node in llm:
        agent = _agent_of(node, graph)
        if agent is not None:
            found.extend(_ignored(node, agent))
    return found


def _ignored(node: Node, agent: str) -> list[Diagnostic]:
    found = []
    keys = [key for key in _IGNORED_BY_AGENTS if _in_force(node, key)]
    if agent == "gemini-cli" and node.raw("reasoning_effort") is not None:
        keys.append("reasoning_effort")
    acp = is_acp_backend(agent)
    if acp:
        keys += [key for key in ("llm_model", "reasoning_effort") if node.raw(key) is not None]
    for key in keys:
        why = _IGNORED_BY_AGENTS.get(key, "gemini-cli has no flag for it")
        if acp and key not in _IGNORED_BY_AGENTS:
            why = "an ACP agent chooses its model and effort in its own configuration"
        message = f"{key} on {node.id} is ignored by backend {agent}: {why}"
        fix = f"remove {key} from {node.id}, or run it with backend=llm"
        found.append(at("backend", "warning", node, message, key=key, fix=fix))
    if acp:
        found.extend(_acp_tool_patterns(node, agent))
    return found


def _acp_tool_patterns(node: Node, agent: str) -> list[Diagnostic]:
    """An ACP agent gets whole MCP servers: only ``mcp_deny="mcp__NAME__*"`` acts."""
    try:
        deny = parse_mcp_tools(_own_or_graph(node, "mcp_deny"))
        allow = parse_mcp_tools(_own_or_graph(node, "mcp_allow"))
    except ValueError:
        return []  # attribute_value reports it
    narrow = [("mcp_allow", n, p) for n, p in allow] + [
        ("mcp_deny", n, p) for n, p in deny if p != "*"
    ]
    if not narrow:
        return []
    key, name, pattern = narrow[0]
    message = (
        f"{key} mcp__{name}__{pattern} on {node.id} cannot be honoured by backend {agent}: "
        "an ACP agent gets whole MCP servers, and the run refuses it"
    )
    fix = f'drop the pattern, or leave the server out with mcp_deny="mcp__{name}__*"'
    return [at("backend", "error", node, message, key=key, fix=fix)]


def _own_or_graph(node: Node, key: str) -> str:
    own = node.raw(key)
    return (own if own is not None else node.graph.raw(key) or "").strip()
