"""Completion: attribute names for the scope at the cursor, closed sets of values,
node ids and condition keys.

Everything comes from the code that checks it: names and docs from the
attribute schema, closed values from the schema's own parsers (whose error
names the choices), models from the price table, handler types from the linter.
"""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from attractor.dot.conditions import OUTCOME_VALUES
from attractor.dot.graph import Graph
from attractor.dot.schema import FIDELITY_MODES, SHAPE_TO_TYPE, SPECS, known_names, parse_bool
from attractor.linter.base import known_types
from attractor.llm.factory import PROVIDERS
from attractor.llm.pricing import BUILTIN_PRICES
from attractor.lsp.text import Cursor

#: Attributes whose value is a node id.
NODE_KEYS = ("retry_target", "fallback_retry_target")
_CONTEXT_KEY = re.compile(r"\bcontext\.([A-Za-z_][\w.]*)")


def choices(key: str) -> list[str]:
    """The closed set of values of attribute ``key`` (empty for free text)."""
    if key == "shape":
        return list(SHAPE_TO_TYPE)
    if key == "type":
        return sorted(known_types())
    if key in ("fidelity", "default_fidelity"):
        return list(FIDELITY_MODES)
    if key == "llm_model":
        return list(BUILTIN_PRICES)
    if key == "llm_provider":
        return list(PROVIDERS)
    spec = SPECS.get(key)
    if spec is None:
        return []
    if spec.parse is parse_bool:
        return ["true", "false"]
    try:  # a closed set's parser names its choices when it refuses a value
        spec.coerce("\0")
    except ValueError as error:
        text = str(error)
        if text.startswith("expected one of "):
            return text.removeprefix("expected one of ").split(", ")
    return []


def condition_keys(graph: Graph | None) -> list[lsp.CompletionItem]:
    """``outcome=...``, ``preferred_label=...`` and the context keys the pipeline uses."""
    items = [
        lsp.CompletionItem(f"outcome={v}", kind=lsp.CompletionItemKind.EnumMember)
        for v in OUTCOME_VALUES
    ]
    labels: set[str] = set()
    keys: set[str] = set()
    if graph is not None:
        for edge in graph.edges():
            if edge.label:
                labels.add(edge.label)
            keys.update(_CONTEXT_KEY.findall(edge.condition))
        for key in graph.attrs:
            if key.startswith("context."):
                keys.add(key.removeprefix("context."))
    items += [
        lsp.CompletionItem(f"preferred_label={label}", kind=lsp.CompletionItemKind.EnumMember)
        for label in sorted(labels)
    ] or [lsp.CompletionItem("preferred_label=", kind=lsp.CompletionItemKind.Property)]
    items += [
        lsp.CompletionItem(f"context.{key}", kind=lsp.CompletionItemKind.Variable)
        for key in sorted(keys)
    ]
    return items


def node_items(graph: Graph | None) -> list[lsp.CompletionItem]:
    if graph is None:
        return []
    return [
        lsp.CompletionItem(node.id, kind=lsp.CompletionItemKind.Reference, detail=node.handler_type)
        for node in graph.nodes()
    ]


def attribute_items(scope: str) -> list[lsp.CompletionItem]:
    items = []
    for name in known_names(scope):  # type: ignore[arg-type]
        spec = SPECS[name]
        default = "" if spec.default in (None, "") else f" (default {spec.default})"
        items.append(
            lsp.CompletionItem(
                name,
                kind=lsp.CompletionItemKind.Property,
                detail=f"{scope} attribute{default}",
                documentation=spec.doc or None,
                insert_text=f"{name}=",
            )
        )
    return items


def completions(cursor: Cursor, graph: Graph | None) -> list[lsp.CompletionItem]:
    """What may be written at ``cursor``."""
    if cursor.where == "name":
        return attribute_items(cursor.scope)
    if cursor.where == "value":
        if cursor.key in NODE_KEYS:
            return node_items(graph)
        if cursor.key == "condition" or "&&" in cursor.prefix:
            return condition_keys(graph)
        if cursor.key == "outcome":  # inside a condition: condition="outcome=
            return [
                lsp.CompletionItem(v, kind=lsp.CompletionItemKind.EnumMember)
                for v in OUTCOME_VALUES
            ]
        if cursor.key == "preferred_label":
            labels = sorted({e.label for e in graph.edges() if e.label}) if graph else []
            return [lsp.CompletionItem(v, kind=lsp.CompletionItemKind.EnumMember) for v in labels]
        return [
            lsp.CompletionItem(value, kind=lsp.CompletionItemKind.EnumMember)
            for value in choices(cursor.key)
        ]
    if cursor.where == "edge_target":
        return node_items(graph)
    if cursor.where == "statement":
        return node_items(graph) + attribute_items("graph")
    return []
