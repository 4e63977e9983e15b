"""Dialect rules: aliases resolved to our names, and attributes we cannot honour."""

from __future__ import annotations

from attractor.dot.dialects import (
    ATTRIBUTE_ALIASES,
    FOREIGN_ATTRIBUTES,
    METADATA_PREFIXES,
    OUTCOME_ALIASES,
    PROPERTY_ALIASES,
    TYPE_MEANINGS,
    AliasUse,
    foreign,
)
from attractor.dot.graph import Edge, Graph, Node, SourcePos
from attractor.errors import Diagnostic, StylesheetError
from attractor.linter.base import at, facts, rule_list

RULES, rule = rule_list()


def _alias_diagnostic(use: AliasUse) -> Diagnostic:
    pos = use.pos
    if use.kind == "outcome":
        message = f"outcome '{use.written}' is read as {use.canonical}"
        fix = f"write outcome={use.canonical}"
    elif use.shadowed:
        message = (
            f"'{use.written}' is another spelling of {use.canonical}, which is also set: "
            f"{use.canonical} wins and {use.written} is ignored"
        )
        return Diagnostic(
            "alias",
            "warning",
            message,
            pos.file,
            pos.line,
            pos.column,
            use.node,
            use.edge,
            f"remove {use.written}",
        )
    elif use.kind == "type":
        meaning = TYPE_MEANINGS.get(use.canonical.removeprefix("type="), "")
        message = f"'{use.written}' is read as {use.canonical}" + (
            f" ({meaning})" if meaning else ""
        )
        fix = f"write {use.canonical}"
    elif use.written == "prompt_file":
        message = "'prompt_file' is read as prompt=\"@FILE\" (a prompt file)"
        fix = 'write prompt="@FILE" instead of prompt_file="FILE"'
    else:
        message = f"'{use.written}' is read as {use.canonical}"
        fix = f"rename {use.written} to {use.canonical}"
    return Diagnostic(
        "alias", "style", message, pos.file, pos.line, pos.column, use.node, use.edge, fix
    )


def _table() -> str:
    attributes = ", ".join(
        f"`{alias}` ({scope}) = `{ours}`" for (scope, alias), ours in ATTRIBUTE_ALIASES.items()
    )
    outcomes = ", ".join(f"`{alias}` = `{ours}`" for alias, ours in OUTCOME_ALIASES.items())
    props = ", ".join(f"`{alias}:` = `{ours}:`" for alias, ours in PROPERTY_ALIASES.items())
    return (
        f"Attributes: {attributes}.\n\nOutcome values in conditions (any letter case): "
        f"{outcomes}.\n\nStylesheet properties: {props}."
    )


@rule("alias", "style", "warning")
def alias(graph: Graph) -> list[Diagnostic]:
    """An alias another engine writes for something attractor reads under another name."""
    found: list[Diagnostic] = []
    seen: set[tuple[str, SourcePos]] = set()
    for use in graph.aliases:
        mark = (use.written, use.pos)
        if use.kind == "attribute" and mark in seen:
            continue  # a ``node [...]`` default: reported once, where it was written
        seen.add(mark)
        found.append(_alias_diagnostic(use))
    found.extend(_stylesheet_aliases(graph))
    return found


alias.__doc__ = (
    "An alias another engine writes for something attractor reads under another name.\n\n"
    "The alias is an exact synonym: it is resolved to the canonical name once, right "
    "after parsing, so the run, `--dry-run` and every other rule see the canonical "
    "form. The note (severity `style`) only asks for the canonical spelling; "
    "`attractor lint --strict` counts it. When a node sets both the alias and the "
    "canonical attribute, the canonical one wins and the note is a warning.\n\n"
    + _table()
    + "\n\nSee docs/dialects.md."
)


def _stylesheet_aliases(graph: Graph) -> list[Diagnostic]:
    text = graph.attrs.get("model_stylesheet")
    if not text:
        return []
    from attractor.dot.stylesheet import parse_stylesheet

    try:
        sheet = parse_stylesheet(text)
    except StylesheetError:
        return []  # stylesheet_syntax reports it
    return [
        at(
            "alias",
            "style",
            graph,
            f"model_stylesheet line {line}, column {column}: '{written}:' is read as {ours}",
            key="model_stylesheet",
            fix=f"write {ours}: in the stylesheet",
        )
        for written, ours, line, column in sheet.aliases
    ]


@rule("dialect_attribute", "error")
def dialect_attribute(graph: Graph) -> list[Diagnostic]:
    """An attribute that another engine acts on and attractor cannot honour.

    Ignoring it would run the pipeline differently from what its author meant,
    so it is an error naming what it does there and what to write here.
    """
    found: list[Diagnostic] = []
    seen: set[tuple[str, SourcePos | None]] = set()
    items: list[Graph | Node | Edge] = [graph, *facts(graph).nodes, *facts(graph).edges]
    for item in items:
        for key in item.attrs:
            meaning = foreign(item.scope, key)
            if meaning is None:
                continue
            mark = (key, item.pos_of(key))
            if mark[1] is not None and mark in seen:
                continue
            seen.add(mark)
            message = f"'{key}' {meaning.meant} in the engine this was written for; attractor "
            message += "does not, and would run this differently"
            fix = meaning.write
            found.append(at("dialect_attribute", "error", item, message, key=key, fix=fix))
    return found


dialect_attribute.__doc__ = (
    (dialect_attribute.__doc__ or "")
    + "\n\n"
    + "\n".join(
        f"- `{key}` ({scope}): {f.meant}. Here: {f.write}."
        for (scope, key), f in FOREIGN_ATTRIBUTES.items()
    )
    + "\n\nKeys in a metadata namespace ("
    + ", ".join(f"`{p}`" for p in METADATA_PREFIXES)
    + ") are never read and never reported. See docs/dialects.md."
)
