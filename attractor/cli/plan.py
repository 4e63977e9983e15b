"""``attractor run --dry-run``: the plan of a pipeline, with nothing run.

The plan walks the graph from the start node, breadth first, and prints every
node once: its handler, model and provider (and where they come from), turn
budget and its source, timeout, retries, tool command; then its edges with
their conditions. An edge to a node already printed says so (a loop or a join)
instead of printing that node again.
"""

from __future__ import annotations

from collections import deque
from urllib.parse import urlsplit

from attractor.dot.graph import Edge, Graph, Node
from attractor.dot.includes import SUBGRAPH, resolve_dot_file, written_path
from attractor.dot.schema import format_duration, is_acp_backend
from attractor.errors import UsageError
from attractor.launch import (
    backend_name,
    describe_acp,
    describe_servers,
    max_retries_for,
    node_model_spec,
    resolve_budget,
    step_boundary,
)
from attractor.llm.credentials import key_plan, redact_url
from attractor.settings import Settings, step_limit


def _order(graph: Graph) -> list[Node]:
    """Nodes reachable from the start, breadth first, each once."""
    start = graph.start_node()
    if start is None:
        return []
    seen = {start.id}
    queue = deque([start])
    order: list[Node] = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for edge in node.outgoing():
            if edge.target not in seen:
                seen.add(edge.target)
                queue.append(graph.node(edge.target))
    return order


def _model(node: Node, settings: Settings) -> list[str]:
    """The model line, and the key line: which variable (never its value) goes where."""
    chosen = backend_name(node, settings)
    if is_acp_backend(chosen):
        return [f"agent: {describe_acp(chosen, node, settings)}", "model: the agent's own"]
    if settings.backend == "simulate":
        return ["model: simulated (no model is called)"]
    if settings.backend.startswith("scripted:"):
        return [f"model: scripted replies from {settings.backend.removeprefix('scripted:')}"]
    try:
        spec = node_model_spec(node, settings)
    except UsageError as error:
        return [f"model: cannot be chosen: {error}"]
    source = settings.source("model") if settings.model else "node llm_model or stylesheet"
    where = f" at {redact_url(spec.base_url)}" if spec.base_url else ""
    lines = [f"model: {spec.model} ({spec.provider}{where}; from {source})"]
    if backend_name(node, settings) == "llm":  # an agent CLI signs in on its own
        key = key_plan(spec.provider, spec.base_url, spec.api_key_env).describe()
        if settings.source("api_key_env").startswith("not applied"):
            key += f"; api_key_env {settings.source('api_key_env')}"
        lines.append(key)
    return lines


def _aliases(graph: Graph, node: str | None, edge: tuple[str, str] | None = None) -> list[str]:
    """``aliases: model -> llm_model``: what lint's ``alias`` rule resolved here."""
    uses = [u for u in graph.aliases if u.node == node and u.edge == edge]
    if not uses:
        return []
    shown = dict.fromkeys(f"{u.written} -> {u.canonical}" for u in uses)
    return ["aliases: " + ", ".join(shown)]


def _prompt_source(node: Node, graph: Graph) -> str:
    """Where the stage's prompt comes from: a prompt file, the prompt or the label."""
    read = graph.prompt_files.get(node.id)
    if read is not None:
        return f"prompt: from {read.path} ({len(read.text):,} characters)"
    if node.prompt:
        return f"prompt: inline ({len(node.prompt):,} characters)"
    return "prompt: the label (no prompt attribute)"


def _details(node: Node, graph: Graph, settings: Settings) -> list[str]:
    kind = node.handler_type
    lines: list[str] = _aliases(graph, node.id)
    if kind == "codergen":
        lines.append(_prompt_source(node, graph))
        budget = resolve_budget(node, graph, settings, prompt=node.prompt)
        lines += [*_model(node, settings), f"turns: {budget.effective} ({budget.source})"]
        servers = describe_servers(node, settings)
        if servers is not None:
            if is_acp_backend(backend_name(node, settings)):
                servers += " (handed to the ACP agent in session/new; it starts them)"
            lines.append(f"mcp servers: {servers}")
    if kind == "tool":
        command = str(node.get("tool_command") or "")
        verb = "would run (simulated)" if settings.simulates_tools else "runs"
        lines.append(f"{verb}: {command}")
    boundary = step_boundary(node, settings)
    if boundary is not None:
        lines.append(f"boundary: {boundary}")
    if kind == SUBGRAPH:
        lines.append(f"runs inline: {resolve_dot_file(graph, written_path(node))}")
    if kind == "parallel":
        policy, most = node.get("join_policy"), node.get("max_parallel")
        lines.append(f"fan-out: join_policy={policy}, max_parallel={most}")
    if kind not in ("start", "exit"):
        timeout = node.timeout
        lines.append(f"timeout: {format_duration(timeout) if timeout else 'none'}")
        lines.append(f"retries: {max_retries_for(node, graph)}")
    return lines


def _reaches(graph: Graph, source: str, goal: str) -> bool:
    seen = {source}
    stack = [source]
    while stack:
        node_id = stack.pop()
        if node_id == goal:
            return True
        for edge in graph.outgoing(node_id):
            if edge.target not in seen:
                seen.add(edge.target)
                stack.append(edge.target)
    return False


def _edge_line(graph: Graph, edge: Edge, printed: dict[str, int], index: int) -> str:
    parts = [f"-> {edge.target}"]
    if edge.label:
        parts.append(f'"{edge.label}"')
    if edge.condition:
        parts.append(f"when {edge.condition}")
        written = [u.written for u in graph.aliases if u.edge == (edge.source, edge.target)]
        if written:
            parts.append(f"(outcome written {', '.join(written)})")
    if edge.weight:
        parts.append(f"weight {edge.weight}")
    at = printed.get(edge.target)
    if at is not None and at <= index:
        loop = _reaches(graph, edge.target, edge.source)
        parts.append("(loop, shown above)" if loop else "(shown above)")
    return " ".join(parts)


def _backend_source(settings: Settings) -> str:
    source = settings.source("backend")
    if source != "default":
        return source
    if settings.backend == "llm":
        return "a model or provider is configured"
    return "no model configured; tool commands would run for real"


def _steps_line(graph: Graph, settings: Settings) -> str:
    limit, source = step_limit(settings, len(graph))
    return f"step budget: {limit:,} node executions ({source})"


def _notify_line(settings: Settings) -> str:
    """Where notifications go (scheme and host only: a webhook's path may be a token)."""
    parts = urlsplit(settings.notify or "")
    signed = f", signed with ${settings.notify_secret_env}" if settings.notify_secret_env else ""
    return (
        f"notify: {parts.scheme}://{parts.netloc.rpartition('@')[2]} of "
        f"{', '.join(settings.notify_on)} ({settings.notify_format}{signed}; "
        f"from {settings.source('notify')})"
    )


def format_plan(graph: Graph, settings: Settings, file: str, workspace: str | None = None) -> str:
    """The dry-run plan as text (ends with a newline); ``workspace`` is its workspace line."""
    lines = [
        f"dry run of {file}: nothing runs (no model calls, no tool commands, no run directory)",
        f"backend: {settings.backend} ({_backend_source(settings)})",
        _steps_line(graph, settings),
    ]
    if workspace is not None:
        lines.append(workspace)
    if graph.goal:
        lines.append(f"goal: {graph.goal}")
    if settings.notify:
        lines.append(_notify_line(settings))
    lines += [f"graph {line}" for line in _aliases(graph, None)]
    lines += _body(graph, settings, 0)
    return "\n".join(lines) + "\n"


#: Sub-pipelines shown inside sub-pipelines, at most (lint refuses a cycle).
_MAX_DEPTH = 8


def _body(graph: Graph, settings: Settings, depth: int) -> list[str]:
    """Every node reachable from the start with its details and edges; a
    sub-pipeline's nodes follow its node, indented."""
    order = _order(graph)
    printed = {node.id: i for i, node in enumerate(order)}
    lines: list[str] = []
    for index, node in enumerate(order):
        lines += ["", f"{index + 1}. {node.id} [{node.handler_type}]"]
        lines += [f"   {line}" for line in _details(node, graph, settings)]
        if node.handler_type == SUBGRAPH and depth < _MAX_DEPTH:
            lines += [f"   | {line}".rstrip() for line in _sub_plan(node, graph, settings, depth)]
        lines += [f"   {_edge_line(graph, edge, printed, index)}" for edge in node.outgoing()]
    missing = [n.id for n in graph.nodes() if n.id not in printed]
    if missing:
        lines += ["", "not reachable from the start: " + ", ".join(missing)]
    return lines


def _sub_plan(node: Node, graph: Graph, settings: Settings, depth: int) -> list[str]:
    """The plan of the pipeline a sub-pipeline node runs (lint has checked it)."""
    from attractor.linter.prepare import prepare

    path = resolve_dot_file(graph, written_path(node))
    child, _ = prepare(path, file=str(path))
    if child is None:
        return [f"{path}: does not parse (attractor lint {path})"]
    head = f"sub-pipeline {child.name}" + (f" (goal: {child.goal})" if child.goal else "")
    return [head, *_body(child, settings, depth + 1)[1:]]
