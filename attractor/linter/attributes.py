"""Attribute rules: values, names, types, fidelity, prompts, conditions, stylesheet."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from attractor.dot.conditions import parse_condition, special_key_typo
from attractor.dot.dialects import agrees, foreign, is_metadata
from attractor.dot.graph import Edge, Graph, Node, SourcePos
from attractor.dot.schema import (
    FIDELITY_MODES,
    PRESENTATION_ATTRIBUTES,
    SPECS,
    known_names,
    parse_duration,
    spec_for,
)
from attractor.errors import ConditionError, Diagnostic, Severity, StylesheetError
from attractor.linter.base import (
    at,
    at_value,
    did_you_mean,
    facts,
    handler_types_closed,
    known_types,
    rule_list,
)

RULES, rule = rule_list()

Item = Graph | Node | Edge

#: Checked by their own rules, so attribute_value does not report them twice.
_OWN_RULE = frozenset({"fidelity", "default_fidelity"})


def _items(graph: Graph) -> Iterator[Item]:
    known = facts(graph)
    yield graph
    yield from known.nodes
    yield from known.edges


def _once(seen: set[tuple[str, SourcePos | None]], key: str, item: Item) -> bool:
    """False when this attribute's source position was already reported.

    A bad value in a ``node [...]`` default is inherited by every node after
    it; it is reported once, at the default.
    """
    mark = (key, item.pos_of(key))
    if mark[1] is not None and mark in seen:
        return False
    seen.add(mark)
    return True


@rule("attribute_value", "error")
def attribute_value(graph: Graph) -> list[Diagnostic]:
    """A known attribute whose value does not parse for its type."""
    found: list[Diagnostic] = []
    seen: set[tuple[str, SourcePos | None]] = set()
    # Each attribute's texts parsed once: thousands of nodes share a few values.
    errors: dict[tuple[str, str], str | None] = {}
    for item in _items(graph):
        for key, raw in item.attrs.items():
            spec = spec_for(key, item.scope)
            if spec is None or spec.free_text or key in _OWN_RULE:
                continue
            if (key, raw) in errors:
                error = errors[key, raw]
            else:
                error = errors[key, raw] = _parse_error(spec.coerce, raw)
            if error is not None and _once(seen, key, item):
                message, fix = _value_message(key, raw, spec.parse, error)
                found.append(at("attribute_value", "error", item, message, key=key, fix=fix))
    return found


def _parse_error(parse: Callable[[str], object], raw: str) -> str | None:
    """Why ``raw`` does not parse (None: it does)."""
    try:
        parse(raw)
    except ValueError as error:
        return str(error)
    return None


_BARE_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_EXPECTED = re.compile(r"(?<![A-Za-z])expected ")


def _value_message(key: str, raw: str, parse: object, error: str) -> tuple[str, str]:
    """The message and fix of a value that does not parse for its type."""
    if parse is parse_duration and _BARE_NUMBER.fullmatch(raw.strip()):
        # kilroy (and fabro's copies of its pipelines) write timeouts in bare seconds.
        number = raw.strip()
        return (
            f'{key}="{raw}": a bare number is not a duration here (it needs a unit; '
            "kilroy reads it as seconds)",
            f'write {key}="{number}s" if seconds were meant; attractor migrate FILE '
            "--from kilroy converts every bare timeout of a kilroy pipeline",
        )
    return f'{key}="{raw}": {error}', _value_fix(key, error)


def _value_fix(key: str, error: str) -> str:
    """``write KEY as ...`` from the part of a parse error after ``expected``."""
    found = list(_EXPECTED.finditer(error))
    return f"write {key} as {error[found[-1].end() :]}" if found else f"correct the value of {key}"


def _unknown_message(key: str, scope: str) -> tuple[str, str]:
    spec = SPECS.get(key)
    if spec is not None:
        where = " or ".join(sorted(spec.scopes))
        return (
            f"'{key}' is a {where} attribute; it has no effect on a {scope}",
            f"move {key} to the {where}, or remove it",
        )
    close = did_you_mean(key, known_names(scope))  # type: ignore[arg-type]
    if close is not None:
        return f"unknown attribute '{key}'; did you mean '{close}'?", f"rename it to {close}"
    return (
        f"unknown attribute '{key}' is ignored",
        f"remove it; docs/attributes.md lists what a {scope} reads",
    )


@rule("unknown_attribute", "warning")
def unknown_attribute(graph: Graph) -> list[Diagnostic]:
    """An attribute attractor does not understand here (Graphviz styling is fine).

    Keys in a metadata namespace (``x_``, ``ui_``, ``meta.``) are never reported,
    nor is ``is_codergen="true"`` on a node that runs as an LLM stage (or the
    start or exit) anyway; attributes another engine acts on and attractor
    cannot honour are errors of ``dialect_attribute``.
    """
    found: list[Diagnostic] = []
    seen: set[tuple[str, SourcePos | None]] = set()
    for item in _items(graph):
        for key in item.attrs:
            if key in PRESENTATION_ATTRIBUTES or spec_for(key, item.scope) is not None:
                continue
            if is_metadata(key) or foreign(item.scope, key) is not None:
                continue
            if isinstance(item, Node) and agrees(key, item.attrs[key], facts(graph).types[item.id]):
                continue
            if _once(seen, key, item):
                message, fix = _unknown_message(key, item.scope)
                found.append(at("unknown_attribute", "warning", item, message, key=key, fix=fix))
    return found


@rule("fidelity_valid", "warning")
def fidelity_valid(graph: Graph) -> list[Diagnostic]:
    """fidelity / default_fidelity is one of the known modes."""
    found: list[Diagnostic] = []
    for item in _items(graph):
        for key in ("fidelity", "default_fidelity"):
            value = item.attrs.get(key)
            if value is None or value.strip() in FIDELITY_MODES:
                continue
            close = did_you_mean(value.strip(), FIDELITY_MODES, cutoff=0.6)
            found.append(
                at(
                    "fidelity_valid",
                    "warning",
                    item,
                    f"{key}={value} is not a fidelity mode; use one of "
                    + ", ".join(FIDELITY_MODES),
                    key=key,
                    fix=f"use {key}={close}" if close else f"use {key}={FIDELITY_MODES[0]}",
                )
            )
    return found


@rule("type_known", "error", "warning")
def type_known(graph: Graph) -> list[Diagnostic]:
    """An explicit ``type`` names a registered handler type.

    A node whose type has no handler fails every time it runs. From the command
    line (``attractor lint``, ``run``, ``resume``, ``serve``) no handler can be
    registered, so an unknown type is an ERROR there. Through the library it is
    a WARNING: the program may still register a handler for it
    (``HandlerRegistry.register``, which also tells lint the type exists) before
    it runs the pipeline.
    """
    types = known_types()
    closed = handler_types_closed()
    severity: Severity = "error" if closed else "warning"
    found: list[Diagnostic] = []
    for node in facts(graph).nodes:
        value = node.attrs.get("type", "").strip()
        if not value or value in types:
            continue
        close = did_you_mean(value, types, cutoff=0.6)
        if closed:
            why = (
                "no handler can be registered for it from the command line, "
                "so the node would fail every time it runs"
            )
        else:
            why = "register a handler for it before the run, or the node fails every time"
        fix = f"use type={close}" if close else "use one of " + ", ".join(sorted(types))
        found.append(
            at(
                "type_known",
                severity,
                node,
                f"type={value} is not a known handler type; {why}",
                key="type",
                fix=fix,
            )
        )
    return found


@rule("prompt_on_llm_nodes", "warning", after=("shape_known",))
def prompt_on_llm_nodes(graph: Graph) -> list[Diagnostic]:
    """A codergen (LLM) node has a prompt or at least a label to work from.

    Nodes never declared are skipped: edge_target_exists already asks for them.
    """
    return [
        at(
            "prompt_on_llm_nodes",
            "warning",
            node,
            f"LLM node '{node.id}' has no prompt or label",
            fix=f'add prompt="..." to {node.id}',
        )
        for node in facts(graph).nodes
        if node.declared
        and facts(graph).types[node.id] == "codergen"
        and not node.attrs.get("prompt", "").strip()
        and not node.attrs.get("label", "").strip()
    ]


@rule("tool_command_missing", "error")
def tool_command_missing(graph: Graph) -> list[Diagnostic]:
    """A tool node has a ``tool_command``; without one it can only fail."""
    return [
        at(
            "tool_command_missing",
            "error",
            node,
            f"tool node '{node.id}' has no tool_command, so it would always fail",
            fix=f'add tool_command="..." to {node.id}',
        )
        for node in facts(graph).nodes
        if facts(graph).types[node.id] == "tool" and not node.attrs.get("tool_command", "").strip()
    ]


@rule("tool_command_unused", "warning", after=("type_known",))
def tool_command_unused(graph: Graph) -> list[Diagnostic]:
    """A ``tool_command`` (or its alias ``command``) on a node that is not a tool node.

    Only a tool node (shape=parallelogram or type=tool) runs its command; any
    other node ignores it, so an LLM stage written with a command would send
    its prompt or label to the model instead of running the command.
    """
    found: list[Diagnostic] = []
    seen: set[tuple[str, SourcePos | None]] = set()
    known = facts(graph)
    for node in known.nodes:
        kind = known.types[node.id]
        if kind == "tool" or not node.attrs.get("tool_command", "").strip():
            continue
        if _once(seen, "tool_command", node):
            found.append(
                at(
                    "tool_command_unused",
                    "warning",
                    node,
                    f"tool_command on {node.id} never runs: its type is {kind}, not tool",
                    key="tool_command",
                    fix=f"make {node.id} a tool node with shape=parallelogram, "
                    "or remove tool_command",
                )
            )
    return found


@rule("condition_syntax", "error", after=("gate_choice_condition",))
def condition_syntax(graph: Graph) -> list[Diagnostic]:
    """Edge conditions parse (clauses ``key=value``, ``key!=value`` or a bare key, joined by &&)."""
    found: list[Diagnostic] = []
    for edge in facts(graph).edges:
        text = edge.attrs.get("condition")
        if not text:
            continue
        try:
            parse_condition(text)
        except ConditionError as error:
            found.append(
                at_value(
                    "condition_syntax",
                    "error",
                    edge,
                    f'condition="{text}": {error.message}',
                    key="condition",
                    offset=error.column,
                    fix=_condition_fix(error),
                )
            )
    return found


_CUSTOM_OUTCOME = re.compile(r"outcome is never '([^']*)': (did you mean (\w+)\?)?")


def _condition_fix(error: ConditionError) -> str:
    custom = _CUSTOM_OUTCOME.match(error.message)
    if custom is None:
        return "join clauses like outcome=success, tests_passed=true or ready with &&"
    if custom.group(3):
        return f"write outcome={custom.group(3)}"
    # A status of the author's choosing: some engines let a stage write any word.
    value = custom.group(1)
    return (
        f"a stage's outcome is one of our statuses; to route on a word of its choosing, "
        f'have its prompt ask for the label {value} and write condition="preferred_label='
        f'{value}" (attractor migrate FILE --from kilroy lists each such condition of a '
        "kilroy pipeline)"
    )


@rule("condition_key", "warning", after=("condition_syntax", "gate_choice_condition"))
def condition_key(graph: Graph) -> list[Diagnostic]:
    """A plain condition key that looks like a misspelt outcome or preferred_label.

    Such a key is legal (it reads the run context), but ``outcom=success`` can
    never hold, so it is a warning; ``context.outcom`` says the key is meant.
    """
    found: list[Diagnostic] = []
    for edge in facts(graph).edges:
        text = edge.attrs.get("condition")
        try:
            clauses = parse_condition(text).clauses if text else ()
        except ConditionError:
            continue  # condition_syntax reports it
        for clause in clauses:
            meant = special_key_typo(clause.key)
            if meant is None:
                continue
            found.append(
                at_value(
                    "condition_key",
                    "warning",
                    edge,
                    f'condition="{text}": "{clause.key}" is read '
                    f"from the run context; did you mean {meant}?",
                    key="condition",
                    offset=clause.column,
                    fix=f"write {meant}, or context.{clause.key} if you mean the context value",
                )
            )
    return found


@rule("stylesheet_syntax", "error")
def stylesheet_syntax(graph: Graph) -> list[Diagnostic]:
    """The graph's model_stylesheet parses."""
    text = graph.attrs.get("model_stylesheet")
    if not text:
        return []
    from attractor.dot.stylesheet import parse_stylesheet  # off the path of most lints

    try:
        parse_stylesheet(text)
    except StylesheetError as error:
        return [
            at(
                "stylesheet_syntax",
                "error",
                graph,
                f"model_stylesheet line {error.line}, column {error.column}: {error.message}",
                key="model_stylesheet",
                fix="write rules like: * { llm_model: NAME; llm_provider: NAME }",
            )
        ]
    return []


_HOOK_KEYS = ("tool_hooks.pre", "tool_hooks.post")


@rule("tool_hooks", "error", "warning")
def tool_hooks(graph: Graph) -> list[Diagnostic]:
    """``tool_hooks.pre``/``.post`` hold a command and sit where an agent calls tools.

    On the graph a blank hook is an error. On a node a blank value turns the
    graph's hook off for that node, so it is only worth a warning when the graph
    has no hook to turn off. A hook on a node that is not an LLM node never runs
    (a ``node [...]`` default that also reaches LLM nodes is fine).
    """
    found: list[Diagnostic] = []
    for key in _HOOK_KEYS:
        on_graph = graph.attrs.get(key)
        if on_graph is not None and not on_graph.strip():
            message = f'{key}="{on_graph}" on the graph is empty; a hook must be a shell command'
            fix = f"give {key} a command, or remove it"
            found.append(at("tool_hooks", "error", graph, message, key=key, fix=fix))
        found.extend(_node_hooks(graph, key, graph_has_hook=bool(on_graph and on_graph.strip())))
    return found


def _node_hooks(graph: Graph, key: str, *, graph_has_hook: bool) -> list[Diagnostic]:
    known = facts(graph)
    carriers = [node for node in known.nodes if key in node.attrs]
    on_llm = {node.pos_of(key) for node in carriers if known.types[node.id] == "codergen"}
    found: list[Diagnostic] = []
    seen: set[tuple[str, SourcePos | None]] = set()
    for node in carriers:
        blank = not node.attrs[key].strip()
        if blank and not graph_has_hook and _once(seen, key, node):
            message = f'{key}="" on {node.id} turns off nothing: the graph sets no {key}'
            fix = f"remove {key} from {node.id}, or give it a shell command"
            found.append(at("tool_hooks", "warning", node, message, key=key, fix=fix))
        pos = node.pos_of(key)
        llm = known.types[node.id] == "codergen" or (pos is not None and pos in on_llm)
        if not blank and not llm and _once(seen, key, node):
            kind = known.types[node.id]
            message = f"{key} on {node.id} never runs: it is a {kind} node, not an LLM node"
            fix = f"move {key} to the LLM nodes (or to the graph), or remove it"
            found.append(at("tool_hooks", "warning", node, message, key=key, fix=fix))
    return found


@rule("container_image", "warning")
def container_image(graph: Graph) -> list[Diagnostic]:
    """A command step in a container (``sandbox=docker`` or ``podman``) names its image.

    The image comes from the node's ``image``, else the graph's, else ``--image``
    at run time (which lint does not see, hence a warning; without any, the run
    stops before it starts).
    """
    found: list[Diagnostic] = []
    for node in facts(graph).nodes:
        if facts(graph).types[node.id] not in ("tool", "codergen"):
            continue
        engine = (node.attrs.get("sandbox") or graph.attrs.get("sandbox") or "").strip()
        image = (node.attrs.get("image") or graph.attrs.get("image") or "").strip()
        if engine in ("docker", "podman") and not image:
            found.append(
                at(
                    "container_image",
                    "warning",
                    node,
                    f"node '{node.id}' runs its commands in a {engine} container but names "
                    "no image (the run needs --image then)",
                    key="sandbox" if node.attrs.get("sandbox") else None,
                    fix=f'add image="python:3.12-slim" (or your image) to {node.id} or the graph',
                )
            )
    return found
