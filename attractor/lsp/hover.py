"""Hover: an attribute's reference entry, a rule's ``explain`` text, and a node's
settings as ``attractor run --dry-run`` resolves them (stylesheet, graph
defaults, profile, environment and config file)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from attractor.dot.graph import Graph, Node
from attractor.dot.schema import SPECS, format_duration
from attractor.errors import AttractorError
from attractor.launch import max_retries_for, node_model_spec, resolve_budget
from attractor.linter.catalog import explain, find_rule
from attractor.lsp.complete import choices
from attractor.settings import Settings, graph_names_model, resolve_settings


def attribute_doc(key: str) -> str | None:
    """The reference entry of attribute ``key`` (as docs/attributes.md has it)."""
    spec = SPECS.get(key)
    if spec is None:
        return None
    where = ", ".join(s for s in ("graph", "node", "edge") if s in spec.scopes)
    lines = [f"**{spec.name}** ({where})", ""]
    if spec.doc:
        lines += [spec.doc, ""]
    if spec.default not in (None, ""):
        default = str(spec.default).lower() if isinstance(spec.default, bool) else spec.default
        lines.append(f"Default: `{default}`")
    values = choices(key)
    if values and key != "llm_model":
        lines.append("Values: " + ", ".join(f"`{v}`" for v in values))
    return "\n".join(lines).strip()


def rule_doc(rule: str) -> str | None:
    """What ``attractor explain RULE`` prints, as Markdown."""
    found = find_rule(rule)
    return None if found is None else "```text\n" + explain(found).rstrip() + "\n```"


def _settings(graph: Graph) -> Settings:
    return resolve_settings(
        None,
        cwd=Path(graph.file).resolve().parent,
        graph_attrs=graph.attrs,
        graph_models=graph_names_model(graph),
    )


def node_doc(graph: Graph, node: Node) -> str:
    """A node's resolved settings: handler, model, turn budget, timeout, retries."""
    lines = [f"**{node.id}** [{node.handler_type}]"]
    if node.label != node.id:
        lines.append(f"label: {node.label}")
    try:
        settings = _settings(graph)
    except AttractorError as error:
        return "\n\n".join([*lines, f"settings cannot be resolved: {error}"])
    lines += _resolved(graph, node, settings)
    return "\n\n".join(lines)


def _resolved(graph: Graph, node: Node, settings: Settings) -> list[str]:
    lines: list[str] = []
    kind = node.handler_type
    if kind == "codergen":
        lines.append(_model(node, settings))
        budget = resolve_budget(node, graph, settings, prompt=node.prompt)
        lines.append(f"turns: {budget.effective} ({budget.source})")
    if kind == "tool":
        lines.append(f"runs: `{node.get('tool_command') or ''}`")
    if kind not in ("start", "exit"):
        timeout = node.timeout
        lines.append(f"timeout: {format_duration(timeout) if timeout else 'none'}")
        lines.append(f"retries: {max_retries_for(node, graph)}")
        visits = node.get("max_visits") or graph.get("default_max_visits")
        lines.append(f"max visits: {visits if visits else 'no limit'}")
    return lines


def _model(node: Node, settings: Settings) -> str:
    if settings.backend != "llm":
        return f"backend: {settings.backend} ({settings.source('backend')})"
    try:
        spec = node_model_spec(node, settings)
    except AttractorError as error:
        return f"model: cannot be chosen: {error}"
    source = settings.source("model") if settings.model else "node llm_model or stylesheet"
    return f"model: {spec.model} ({spec.provider}; from {source})"


def markdown(text: str, where: lsp.Range | None = None) -> lsp.Hover:
    return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text), where)
