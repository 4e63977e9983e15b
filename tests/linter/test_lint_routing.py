"""Routing rules, and one root cause giving one diagnostic."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.linter.catalog import find_rule
from attractor.linter.prepare import prepare
from tests.linter.lintkit import by_rule, lint, lint_body

ROOT = Path(__file__).resolve().parents[2]
INVALID = ROOT / "examples" / "invalid"
NEW_RULES = [
    "shape_known",
    "accelerator_unique",
    "gate_choice_condition",
    "duplicate_edge_label",
    "edge_never_taken",
    "no_default_edge",
]


@pytest.mark.parametrize("rule", NEW_RULES)
def test_each_new_rule_fires_on_its_example_and_not_on_the_fixed_one(rule: str) -> None:
    found = prepare(INVALID / f"{rule}.dot")[1]
    (hit,) = by_rule(found, rule)
    doc = find_rule(rule)
    assert doc is not None and hit.severity in doc.severities
    assert hit.fix and hit.docs == f"docs/rules.md#{rule}"
    assert prepare(INVALID / "fixed" / f"{rule}.dot")[1] == []


def test_unknown_shape_suggests_the_near_one_and_says_what_would_happen() -> None:
    (error,) = lint_body("w [shape=boxx, prompt=p]\nstart -> w -> exit")
    assert error.rule == "shape_known" and error.severity == "error"
    assert "did you mean 'box'" in error.message and "LLM stage" in error.message
    assert error.fix == "use shape=box"


def test_a_graphviz_shape_is_fine_when_type_picks_the_handler() -> None:
    body = 'w [type=tool, shape=cylinder, tool_command="true"]\nstart -> w -> exit'
    assert lint_body(body) == []
    (error,) = lint_body("w [shape=cylinder, prompt=p]\nstart -> w -> exit")
    assert error.rule == "shape_known"


def test_unknown_shape_silences_rules_that_follow_from_it() -> None:
    # No prompt: prompt_on_llm_nodes would only repeat that the node is mistyped.
    found = lint_body("w [shape=boxx]\nstart -> w -> exit")
    assert [d.rule for d in found] == ["shape_known"]


def test_duplicate_accelerator_names_both_choices_and_a_free_key() -> None:
    body = (
        "g [shape=hexagon]\nstart -> g\n"
        'g -> exit [label="[A] Approve"]\ng -> exit [label="[A] Again"]'
    )
    (error,) = lint_body(body)
    assert error.rule == "accelerator_unique" and error.edge == ("g", "exit")
    assert "'[A] Approve' and '[A] Again'" in error.message
    assert error.fix == 'give it its own key: label="[G] Again"'


def test_same_label_twice_on_a_gate_is_one_diagnostic() -> None:
    # The same label means the same key: accelerator_unique says it, once.
    body = 'g [shape=hexagon]\nstart -> g\ng -> exit [label="Yes"]\ng -> exit [label="Yes"]'
    assert [d.rule for d in lint_body(body)] == ["accelerator_unique"]


def test_conditions_on_gate_choices_are_errors_but_not_elsewhere() -> None:
    gate = 'g [shape=hexagon]\nstart -> g\ng -> exit [label="Go", condition="outcome=fail"]'
    (error,) = lint_body(gate)
    assert error.rule == "gate_choice_condition"
    plain = 'w [prompt=p]\nstart -> w\nw -> exit [condition="outcome=fail"]\nw -> exit'
    assert lint_body(plain) == []


def test_same_label_on_conditional_edges_is_fine() -> None:
    body = (
        'w [prompt=p, max_visits=2]\nstart -> w\nw -> exit [label="go", condition="ready"]\n'
        'w -> exit [label="go"]'
    )
    assert lint_body(body) == []


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        ("outcome=success && outcome=fail", False),
        ("ready=yes && ready!=yes", False),
        ("ready!=yes && ready=yes", False),
        ("outcome=success && outcome=success", True),
        ("ready=yes && ready!=no", True),
        ("ready && other=1", True),
    ],
)
def test_contradictory_conditions_can_never_be_taken(condition: str, holds: bool) -> None:
    body = f'w [prompt=p]\nstart -> w\nw -> exit [condition="{condition}"]\nw -> exit'
    found = by_rule(lint_body(body), "edge_never_taken")
    assert (found == []) is holds


CASCADE = """digraph Typo {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    plan      [prompt="plan"]
    implement [prompt="implement"]
    test      [prompt="test"]
    review    [prompt="review"]
    fanout    [shape=component]
    a [prompt=a]
    b [prompt=b]
    join [shape=tripleoctagon]
    start -> plan -> implment
    implement -> test -> review -> fanout
    fanout -> a -> join
    fanout -> b -> join
    join -> exit
}
"""


def test_one_misspelt_edge_target_is_one_error() -> None:
    found = lint(CASCADE)
    assert [(d.rule, d.severity) for d in found] == [("edge_target_exists", "error")]
    assert "did you mean 'implement'" in found[0].message


def test_after_the_typo_is_fixed_nothing_is_left() -> None:
    assert lint(CASCADE.replace("-> implment", "-> implement")) == []


def test_real_flow_errors_still_show_beside_a_typo() -> None:
    # 'lost' is unreachable whatever the typo meant, so it is still reported.
    text = CASCADE.replace("join -> exit", 'join -> exit\n    lost [prompt="x"]')
    rules = sorted(d.rule for d in lint(text))
    assert rules == ["edge_target_exists", "reachability"]


def test_every_rule_gives_a_fix_even_without_a_near_name() -> None:
    body = 'w [prompt=p, zzzqqq=1, fidelity="whatever", retry_target=nowhere_at_all]\n'
    body += "start -> w -> exit"
    found = lint(
        "digraph T { start [shape=Mdiamond]; exit [shape=Msquare]\n"
        + body
        + "\nexit -> w [goal_gate=true] }"
    )
    assert {d.rule for d in found} >= {"unknown_attribute", "fidelity_valid", "exit_no_outgoing"}
    assert all(d.fix for d in found), [d for d in found if not d.fix]


def test_a_broken_condition_on_a_gate_choice_is_one_error() -> None:
    # Removing the condition (the gate rule's fix) also removes the syntax error.
    body = 'g [shape=hexagon]\nstart -> g\ng -> exit [label="Go", condition="outcome==fail"]'
    assert [d.rule for d in lint_body(body)] == ["gate_choice_condition"]


def test_no_default_edge_warns_for_the_outcome_no_condition_covers() -> None:
    tool = 't [shape=parallelogram, tool_command="true"]\nstart -> t\n'
    (warning,) = by_rule(
        lint_body(tool + 't -> exit [condition="context.tool.stdout=ok"]'), "no_default_edge"
    )
    assert warning.severity == "warning" and warning.node == "t"
    assert "outcome=success" in warning.message and "stop there and fail" in warning.message
    # Success and failure both have a way out: a tool ends with nothing else.
    covered = (
        tool + 't -> exit [condition="outcome=success"]\nt -> start [condition="outcome=fail"]'
    )
    assert by_rule(lint_body(covered), "no_default_edge") == []
    # An LLM stage may also report partial success.
    llm = 'w [prompt=p, max_visits=3]\nstart -> w\nw -> exit [condition="outcome=success"]'
    (partial,) = by_rule(lint_body(llm + '\nw -> w [condition="outcome=fail"]'), "no_default_edge")
    assert "outcome=partial_success" in partial.message
    assert (
        by_rule(lint_body(llm + '\nw -> w [condition="outcome!=success"]'), "no_default_edge") == []
    )
    # An edge without a condition is the way out.
    assert by_rule(lint_body(llm + "\nw -> w"), "no_default_edge") == []


def test_gate_choices_written_as_expressions_on_a_free_text_answer_are_named() -> None:
    body = (
        "g [shape=hexagon]\nstart -> g\n"
        "g -> exit [label=\"answer == 'ok'\"]\ng -> start [label=\"answer != 'ok'\"]"
    )
    (error,) = by_rule(lint_body(body), "accelerator_unique")
    assert "routing a free-text answer by expression is not supported here" in error.message
    assert error.fix is not None and 'label="[A] Accept"' in error.fix
    assert error.line == 6
