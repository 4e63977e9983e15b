from __future__ import annotations

import pytest

from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot
from attractor.errors import Diagnostic, ValidationError
from attractor.linter import register_rule, validate, validate_or_raise
from tests.linter.lintkit import HEAD, by_rule, lint, lint_body


@pytest.mark.parametrize(
    ("attrs", "needle"),
    [
        ('max_turns="lots"', 'max_turns="lots": expected an integer from 1 to 500, or auto'),
        ("max_turns=0", 'max_turns="0"'),
        ('timeout="5 minutes"', "expected a duration like"),
        ("goal_gate=maybe", "expected true or false"),
        ("max_visits=0", "at least 1"),
        (
            "tool_profile=codex",
            'tool_profile="codex": expected one of openai, anthropic, gemini, default',
        ),
    ],
)
def test_attribute_value_points_at_the_attribute(attrs: str, needle: str) -> None:
    (error,) = by_rule(lint_body(f"w [prompt=p, {attrs}]\nstart -> w -> exit"), "attribute_value")
    assert needle in error.message
    assert (error.severity, error.node, error.line, error.column) == ("error", "w", 4, 14)
    assert error.fix is not None


def test_attribute_value_on_edges_and_graph_and_defaults_once() -> None:
    found = by_rule(
        lint(
            HEAD + "default_max_retries=-2\nnode [timeout=soon]\na [prompt=p]; b [prompt=p]\n"
            'start -> a -> b -> exit [weight="high"]\n}'
        ),
        "attribute_value",
    )
    assert [(d.line, d.node, d.edge) for d in found] == [
        (4, None, None),
        (5, "a", None),
        (7, None, ("start", "a")),
    ]


def test_good_values_quoted_or_bare_pass() -> None:
    body = (
        'w [prompt=p, timeout=900s, max_turns=auto, max_retries="2", goal_gate=false, '
        "max_visits=3]\n"
    )
    assert (
        lint_body(body + 'start -> w -> exit\nw -> w [weight=-1, condition="outcome=retry"]') == []
    )


def test_unknown_attribute_did_you_mean_and_presentation_attributes() -> None:
    found = by_rule(
        lint_body(
            "w [prompt=p, max_turn=5, timout=5m, color=red, fontsize=9, frobnicate=1]\n"
            "start -> w -> exit [penwidth=2, prompt=x]"
        ),
        "unknown_attribute",
    )
    messages = [d.message for d in found]
    assert messages == [
        "unknown attribute 'max_turn'; did you mean 'max_turns'?",
        "unknown attribute 'timout'; did you mean 'timeout'?",
        "unknown attribute 'frobnicate' is ignored",
        "'prompt' is a node attribute; it has no effect on a edge",
    ]
    assert found[0].fix == "rename it to max_turns"
    assert all(d.severity == "warning" for d in found)


def test_fidelity_valid() -> None:
    found = by_rule(
        lint_body('default_fidelity=ful\nw [prompt=p, fidelity="summary:hi"]\nstart -> w -> exit'),
        "fidelity_valid",
    )
    assert [(d.severity, d.fix) for d in found] == [
        ("warning", "use default_fidelity=full"),
        ("warning", "use fidelity=summary:high"),
    ]
    assert by_rule(found, "attribute_value") == []


def test_prompt_on_llm_nodes() -> None:
    found = by_rule(
        lint_body("w\nt [shape=parallelogram]\nstart -> w -> t -> exit"), "prompt_on_llm_nodes"
    )
    assert [d.node for d in found] == ["w"]
    assert lint_body("w [label=Work]\nstart -> w -> exit") == []


def test_condition_syntax_reports_column() -> None:
    (error,) = by_rule(
        lint_body('w [prompt=p]\nstart -> w\nw -> exit [condition="outcome=success || x"]'),
        "condition_syntax",
    )
    assert error.edge == ("w", "exit") and error.severity == "error"
    # One column: the "|" inside the value, not the attribute plus a column in the message.
    assert "column" not in error.message and (error.line, error.column) == (6, 39)


@pytest.mark.parametrize(
    "condition",
    [
        "ready",
        "tests_passed=true",
        "outcome=success && ready=true",
        "outcome=success && context.ready",
        "preferred_label && tool.exit_code!=0",
    ],
)
def test_unqualified_and_bare_keys_lint_clean(condition: str) -> None:
    body = f'w [prompt=p]\nstart -> w\nw -> exit [condition="{condition}"]\nw -> exit'
    assert lint_body(body) == []


@pytest.mark.parametrize(
    ("condition", "column", "needle"),
    [
        ("outcome=sucess", 1, "outcome is never 'sucess': did you mean success?"),
        ("ready && outcome=sucess", 10, "outcome is never 'sucess'"),
        ("ready == true", 7, "use '='"),
        ("ready ~ true", 7, "expected '=', '!=', '&&' or end of condition after ready"),
        ("outcome", 8, "expected '=' or '!=' after outcome"),
        ("ready &&", 9, "expected a key"),
    ],
)
def test_condition_syntax_still_rejects_malformed_clauses(
    condition: str, column: int, needle: str
) -> None:
    body = f'w [prompt=p]\nstart -> w\nw -> exit [condition="{condition}"]\nw -> exit'
    (error,) = by_rule(lint_body(body), "condition_syntax")
    assert needle in error.message and error.severity == "error"
    # The value starts at column 23 of its line; the diagnostic points inside it.
    assert error.column == 22 + column


@pytest.mark.parametrize(
    ("condition", "fix"),
    [
        ("outcome=sucess", "write outcome=success"),
        ("outcome=needs_dod", 'write condition="preferred_label=needs_dod"'),
        ("ready", None),
    ],
)
def test_a_condition_on_a_status_of_the_authors_choosing_suggests_a_label(
    condition: str, fix: str | None
) -> None:
    body = f'w [prompt=p]\nstart -> w\nw -> exit [condition="{condition} &&"]\nw -> exit'
    if fix is None:  # a plain syntax error keeps the fix about clauses
        (error,) = by_rule(lint_body(body), "condition_syntax")
        assert error.fix == "join clauses like outcome=success, tests_passed=true or ready with &&"
        return
    body = body.replace(" &&", "")
    (error,) = by_rule(lint_body(body), "condition_syntax")
    assert error.fix is not None and fix in error.fix and "&&" not in error.fix
    if "needs_dod" in condition:
        assert "attractor migrate FILE --from kilroy" in error.fix


@pytest.mark.parametrize(("weight", "ok"), [("2.0", True), ("-0.5", True), ("2x", False)])
def test_a_weight_is_any_number(weight: str, ok: bool) -> None:
    body = f'w [prompt=p]\nstart -> w\nw -> exit [weight="{weight}"]'
    errors = by_rule(lint_body(body), "attribute_value")
    assert not errors if ok else "expected a number, like 2 or 1.5" in errors[0].message


def test_a_bare_number_timeout_says_it_is_no_duration_here() -> None:
    (error,) = by_rule(
        lint_body('w [prompt=p, timeout="300"]\nstart -> w -> exit'), "attribute_value"
    )
    assert "a bare number is not a duration here" in error.message
    assert "kilroy reads it as seconds" in error.message
    assert error.fix is not None and error.fix.startswith('write timeout="300s"')
    assert "attractor migrate FILE --from kilroy" in error.fix


def test_condition_key_warns_about_a_misspelt_special_key() -> None:
    body = (
        "w [prompt=p]\nstart -> w\n"
        'w -> exit [condition="ready && outcom=success"]\n'
        'w -> exit [condition="context.outcom=success"]\nw -> exit'
    )
    (warning,) = lint_body(body)
    assert (warning.rule, warning.severity, warning.edge) == (
        "condition_key",
        "warning",
        ("w", "exit"),
    )
    assert '"outcom" is read from the run context; did you mean outcome?' in warning.message
    assert warning.column == 32  # the clause inside the value, the only column reported
    assert warning.fix == "write outcome, or context.outcom if you mean the context value"


def test_stylesheet_syntax() -> None:
    (error,) = by_rule(
        lint_body(
            'model_stylesheet="* { llm_model: a }\n.x { colour: red }"\n'
            "w [prompt=p]\nstart -> w -> exit"
        ),
        "stylesheet_syntax",
    )
    assert "line 2, column 6" in error.message and error.line == 4


class _NoFoo:
    name = "no_foo"

    def apply(self, graph: Graph) -> list[Diagnostic]:
        return [
            Diagnostic(self.name, "info", "foo!", n.pos.file, n.pos.line, n.pos.column, n.id)
            for n in graph.nodes()
            if n.id == "foo"
        ]


def test_custom_rules_extra_and_registered_and_sorting() -> None:
    graph = parse_dot(HEAD + "foo [prompt=p]\nstart -> foo -> exit\n}", file="t.dot")
    assert validate(graph) == []
    (info,) = validate(graph, extra_rules=[_NoFoo()])
    assert (info.rule, info.severity, info.line) == ("no_foo", "info", 4)
    found = validate(parse_dot("digraph G { b; a }"))
    assert found == sorted(found, key=lambda d: (d.file, d.line, d.column))


def test_validate_or_raise() -> None:
    with pytest.raises(ValidationError) as info:
        validate_or_raise(parse_dot("digraph G { a }"))
    assert {d.rule for d in info.value.diagnostics} >= {"start_node", "terminal_node"}
    ok = parse_dot(HEAD + "w [prompt=p, color=red]\nstart -> w -> exit\n}")
    assert validate_or_raise(ok) == []


def test_register_rule_applies_to_later_validations() -> None:
    from attractor.linter import registry

    register_rule(_NoFoo())
    try:
        found = validate(parse_dot(HEAD + "foo [prompt=p]\nstart -> foo -> exit\n}"))
        assert [d.rule for d in found] == ["no_foo"]
    finally:
        registry._CUSTOM_RULES.clear()


def test_tool_node_without_command_is_an_error() -> None:
    found = lint_body(
        't [shape=parallelogram]\nok [type="tool", tool_command="true"]\nstart -> t -> ok -> exit'
    )
    missing = by_rule(found, "tool_command_missing")
    assert [(d.node, d.severity) for d in missing] == [("t", "error")]
