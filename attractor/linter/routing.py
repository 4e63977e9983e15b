"""Routing rules: shapes that pick a handler, human-gate choices, edges that can never be taken."""

from __future__ import annotations

import re
from collections import defaultdict

from attractor.dot.accelerators import accelerator_key, strip_accelerator
from attractor.dot.conditions import Clause, evaluate, parse_condition
from attractor.dot.graph import Edge, Graph, Node, normalize_label
from attractor.dot.schema import SHAPE_TO_TYPE
from attractor.errors import ConditionError, Diagnostic
from attractor.linter.base import at, at_value, did_you_mean, facts, rule_list

RULES, rule = rule_list()

#: Graphviz node shapes: fine as looks on a node whose ``type`` picks the handler.
GRAPHVIZ_SHAPES = frozenset(
    """box polygon ellipse oval circle point egg triangle plaintext plain diamond trapezium
    parallelogram house pentagon hexagon septagon octagon doublecircle doubleoctagon
    tripleoctagon invtriangle invtrapezium invhouse Mdiamond Msquare Mcircle rect rectangle
    square star none underline cylinder note tab folder box3d component promoter cds
    terminator utr primersite restrictionsite fivepoverhang threepoverhang noverhang
    assembly signature insulator ribosite rnastab proteasesite proteinstab rpromoter
    rarrow larrow lpromoter""".split()  # noqa: SIM905
)


@rule("shape_known", "error")
def shape_known(graph: Graph) -> list[Diagnostic]:
    """A node's ``shape`` is one that picks a handler (box, hexagon, parallelogram, ...).

    Any other shape would silently run the node as an LLM stage. A node with an
    explicit ``type`` may use any Graphviz shape for looks.
    """
    found: list[Diagnostic] = []
    seen: set[object] = set()
    for node in facts(graph).nodes:
        shape = node.attrs.get("shape", "").strip()
        if not shape or shape in SHAPE_TO_TYPE:
            continue
        explicit = bool(node.attrs.get("type", "").strip())
        if explicit and shape in GRAPHVIZ_SHAPES:
            continue
        pos = node.pos_of("shape")
        if pos is not None and pos in seen:
            continue  # a node [shape=...] default, reported once
        seen.add(pos)
        found.append(_unknown_shape(node, shape, explicit))
    return found


def _unknown_shape(node: Node, shape: str, explicit: bool) -> Diagnostic:
    close = did_you_mean(shape, SHAPE_TO_TYPE, cutoff=0.6)
    if close is None and explicit:
        close = did_you_mean(shape, GRAPHVIZ_SHAPES, cutoff=0.6)
    meaning = "" if explicit else "; the node would run as an LLM stage"
    if close is not None:
        return at(
            "shape_known",
            "error",
            node,
            f"unknown shape '{shape}' (did you mean '{close}'?){meaning}",
            key="shape",
            fix=f"use shape={close}",
        )
    shapes = ", ".join(f"{s} ({t})" for s, t in SHAPE_TO_TYPE.items())
    return at(
        "shape_known",
        "error",
        node,
        f"unknown shape '{shape}'{meaning}",
        key="shape",
        fix=f"use one of {shapes}",
    )


def _gates(graph: Graph) -> list[Node]:
    known = facts(graph)
    return [node for node in known.nodes if known.types[node.id] == "wait.human"]


def _choice_label(edge: Edge) -> str:
    return edge.attrs.get("label", "").strip() or edge.target


@rule("accelerator_unique", "error")
def accelerator_unique(graph: Graph) -> list[Diagnostic]:
    """No two choices of one human gate share an accelerator key.

    An answer of that key always picks the first of them, so the other can
    only be chosen by typing its full label. Choices written as expressions on
    a typed answer (``review_response == 'ok'``, as some engines route a
    free-text answer) are refused by name: a gate's answer picks a label here.
    """
    found: list[Diagnostic] = []
    for gate in _gates(graph):
        expression = next(
            (e for e in graph.outgoing(gate.id) if _EXPRESSION.search(_choice_label(e))), None
        )
        if expression is not None:
            found.append(_free_text_routing(gate, expression))
            continue
        first: dict[str, Edge] = {}
        for edge in graph.outgoing(gate.id):
            key = accelerator_key(_choice_label(edge))
            earlier = first.setdefault(key, edge)
            if earlier is edge:
                continue
            taken = {accelerator_key(_choice_label(e)) for e in graph.outgoing(gate.id)}
            free = next((c for c in _letters(_choice_label(edge)) if c not in taken), None)
            fix = _key_fix(_choice_label(edge), free)
            found.append(
                at(
                    "accelerator_unique",
                    "error",
                    edge,
                    f"choices '{_choice_label(earlier)}' and '{_choice_label(edge)}' of gate "
                    f"'{gate.id}' share the key {key}; answering {key} always picks "
                    f"'{_choice_label(earlier)}'",
                    key="label",
                    fix=fix,
                )
            )
    return found


#: A choice label written as an expression on the answer (``answer == 'ok'``).
_EXPRESSION = re.compile(r"==|!=|&&|\|\||<=|>=")


def _free_text_routing(gate: Node, edge: Edge) -> Diagnostic:
    """Some engines take a free-text answer and route on expressions over it."""
    return at(
        "accelerator_unique",
        "error",
        edge,
        f"the choices of gate '{gate.id}' are expressions on a typed answer "
        f"('{_choice_label(edge)}'): routing a free-text answer by expression is not "
        "supported here; a person answers a gate by picking one of its edge labels",
        key="label",
        fix='label each choice with the answer a person picks, like label="[A] Accept" '
        'and label="[C] Changes needed"',
    )


def _key_fix(label: str, free: str | None) -> str:
    if free is None:
        return "give each choice of the gate its own key"
    return f'give it its own key: label="[{free}] {strip_accelerator(label)}"'


def _letters(label: str) -> list[str]:
    return [c.upper() for c in label if c.isalnum()] + list("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


@rule("gate_choice_condition", "error")
def gate_choice_condition(graph: Graph) -> list[Diagnostic]:
    """Edges out of a human gate carry no ``condition``.

    A gate's edges are the person's choices. A condition makes a choice also a
    routing rule: ``outcome=fail`` is taken when no answer comes, which is
    rarely what the author meant. One condition is fine: ``preferred_label=X``
    where X is the choice's own label (its target id without a label), which
    holds exactly when the person picks that choice.
    """
    return [
        at(
            "gate_choice_condition",
            "error",
            edge,
            f"choice {edge.source} -> {edge.target} of human gate '{gate.id}' has "
            f'condition="{edge.condition}"; a gate routes by the answer, and a condition '
            "makes this choice taken without it",
            key="condition",
            fix="remove the condition; for an unanswered gate set human.default_choice "
            "or a retry_target",
        )
        for gate in _gates(graph)
        for edge in graph.outgoing(gate.id)
        if edge.attrs.get("condition", "").strip() and not _names_its_own_choice(edge)
    ]


def _names_its_own_choice(edge: Edge) -> bool:
    """Whether the condition is ``preferred_label=`` this choice's own label."""
    try:
        clauses = parse_condition(edge.attrs.get("condition", "")).clauses
    except ConditionError:
        return False
    return len(clauses) == 1 and (clauses[0].key, clauses[0].op, clauses[0].literal) == (
        "preferred_label",
        "=",
        edge.label or edge.target,
    )


@rule("duplicate_edge_label", "warning", after=("accelerator_unique",))
def duplicate_edge_label(graph: Graph) -> list[Diagnostic]:
    """Two unconditional edges out of one node with the same label.

    A stage that reports that label (or a human who picks it) always takes the
    first; the second is only reachable by weight, so one of them is a mistake.
    """
    by_source: dict[str, dict[str, Edge]] = defaultdict(dict)
    found: list[Diagnostic] = []
    for edge in facts(graph).edges:
        label = edge.attrs.get("label", "").strip()
        if not label or edge.attrs.get("condition", "").strip():
            continue
        earlier = by_source[edge.source].setdefault(normalize_label(label), edge)
        if earlier is edge:
            continue
        found.append(
            at(
                "duplicate_edge_label",
                "warning",
                edge,
                f"edges {edge.source} -> {earlier.target} and {edge.source} -> {edge.target} "
                f"both have label '{label}'; choosing '{label}' always takes the first",
                key="label",
                fix="give each edge its own label, or remove one of them",
            )
        )
    return found


def _contradiction(clauses: tuple[Clause, ...]) -> tuple[Clause, Clause] | None:
    """Two clauses that cannot hold together (``k=a && k=b``, ``k=a && k!=a``)."""
    equal: dict[str, Clause] = {}
    unequal: dict[tuple[str, str], Clause] = {}
    for clause in clauses:
        if clause.op == "=":
            other = equal.get(clause.key) or unequal.get((clause.key, clause.literal))
            if other is not None and (other.op == "!=" or other.literal != clause.literal):
                return other, clause
            equal[clause.key] = clause
        elif clause.op == "!=":
            same = equal.get(clause.key)
            if same is not None and same.literal == clause.literal:
                return same, clause
            unequal[(clause.key, clause.literal)] = clause
    return None


def _text(clause: Clause) -> str:
    return f"{clause.key}{clause.op}{clause.literal}"


@rule("edge_never_taken", "error", after=("condition_syntax", "gate_choice_condition"))
def edge_never_taken(graph: Graph) -> list[Diagnostic]:
    """An edge whose condition contradicts itself (``outcome=success && outcome=fail``).

    Such an edge can never be taken.
    """
    found: list[Diagnostic] = []
    for edge in facts(graph).edges:
        text = edge.attrs.get("condition", "")
        try:
            pair = _contradiction(parse_condition(text).clauses) if text.strip() else None
        except ConditionError:
            continue  # condition_syntax reports it
        if pair is None:
            continue
        found.append(
            at_value(
                "edge_never_taken",
                "error",
                edge,
                f"condition of {edge.source} -> {edge.target} can never hold: "
                f"{_text(pair[0])} and {_text(pair[1])} exclude each other",
                key="condition",
                offset=pair[1].column,
                fix="keep one of the two clauses, or split the edge in two",
            )
        )
    return found


#: The outcomes a node of each type may end with that do not take the failure
#: route: a tool succeeds or fails; other nodes may also report partial success.
_NOT_FAILED: dict[str, tuple[str, ...]] = {"tool": ("success",)}
_NOT_FAILED_DEFAULT = ("success", "partial_success")


class _NoContext:
    """The context of a condition that reads only ``outcome``: never consulted."""

    def get(self, key: str, default: object = None) -> object:
        return default


def _holds_for(condition: str, outcome: str) -> bool:
    """Whether ``condition`` surely holds for a node that ended with ``outcome``.

    Only conditions on ``outcome`` alone can be decided before the run; one that
    reads the context or the preferred label may not hold, so it does not count.
    """
    try:
        parsed = parse_condition(condition)
    except ConditionError:
        return True  # condition_syntax reports it
    if any(clause.key != "outcome" for clause in parsed.clauses):
        return False
    return evaluate(parsed, outcome=outcome, preferred_label="", context=_NoContext())


@rule("no_default_edge", "warning", after=("condition_syntax", "type_known"))
def no_default_edge(graph: Graph) -> list[Diagnostic]:
    """A node whose outgoing edges all have conditions has a way out for every outcome.

    When no condition holds, the run stops at that node and fails with
    ``stopped at NODE: no outgoing edge matched (conditions: ...)``: a tool that
    prints something unexpected must not end a pipeline early and green. A
    node with no outgoing edge at all is a terminal and ends the run as its
    outcome says. The rule warns when, for an outcome the node can end with
    other than a failure (success, and partial success except for tools), no
    condition surely holds: conditions that read the context or the preferred
    label may not. Failures take the failure route (fail edges,
    ``retry_target``) and are not counted here. Add an edge without a
    condition as the way out, or a condition for the outcome named.
    """
    known = facts(graph)
    found: list[Diagnostic] = []
    for node in known.nodes:
        kind = known.types[node.id]
        edges = node.outgoing()
        if kind in ("exit", "parallel", "wait.human") or not edges:
            continue
        if any(not e.condition for e in edges):
            continue
        outcomes = _NOT_FAILED.get(kind, _NOT_FAILED_DEFAULT)
        missed = [o for o in outcomes if not any(_holds_for(e.condition, o) for e in edges)]
        if not missed:
            continue
        found.append(
            at(
                "no_default_edge",
                "warning",
                node,
                f"every edge out of {node.id} has a condition and none surely holds when it "
                f"ends with outcome={missed[0]}; the run would stop there and fail",
                fix=f"add an edge without a condition as the way out of {node.id}, "
                f'or one with condition="outcome={missed[0]}"',
            )
        )
    return found
