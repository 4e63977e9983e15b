from __future__ import annotations

import pytest

from attractor.dot.conditions import Clause, evaluate, parse_condition
from attractor.engine.routing import evaluate_condition
from attractor.errors import ConditionError, PipelineError
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus


def test_parses_clauses_with_columns() -> None:
    parsed = parse_condition('outcome=success && context.tests.passed!="no way"')
    assert parsed.clauses == (
        Clause("outcome", "=", "success", 1),
        Clause("context.tests.passed", "!=", "no way", 20),
    )


def test_empty_condition_always_holds() -> None:
    assert parse_condition("   ").clauses == ()
    assert evaluate("", outcome="fail", preferred_label="", context=Context())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("outcome=success", True),
        ("outcome!=success", False),
        ("preferred_label=Fix", True),
        ("preferred_label=fix", False),  # case-sensitive
        ('preferred_label="Fix"', True),
        ("context.tests_passed=true", True),  # Python True reads as "true"
        ("context.count=3", True),
        ("context.missing=", False),
        ("context.missing!=x", True),  # missing keys are the empty string
        ("context.graph.goal=ship", True),  # full dotted key first
        ("outcome=success && context.count=3 && preferred_label=Fix", True),
        ("outcome=success && context.count=4", False),
    ],
)
def test_evaluate(text: str, expected: bool) -> None:
    context = Context({"tests_passed": True, "count": 3, "context.graph.goal": "ship"})
    if text == "context.missing=":
        with pytest.raises(ConditionError):
            parse_condition(text)
        return
    assert evaluate(text, outcome="success", preferred_label="Fix", context=context) is expected


def test_evaluate_condition_takes_an_outcome() -> None:
    outcome = Outcome(StageStatus.PARTIAL_SUCCESS, preferred_label="Approve")
    context = Context()
    assert evaluate_condition("outcome=partial_success", outcome, context)
    assert evaluate_condition("preferred_label=Approve", outcome, context)
    assert not evaluate_condition("outcome=success", outcome, context)


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("outcome==success", "use '='", 8),
        ("outcome", "expected '=' or '!='", 8),
        ("outcom=success", "did you mean outcome?", 1),
        ("status=ok", "unknown key 'status'", 1),
        ("outcome=sucess", "did you mean success?", 1),
        ("outcome=success &&", "expected outcome, preferred_label or context.NAME", 19),
        ("outcome=success || outcome=fail", "expected '&&' or end", 17),
        ('preferred_label="open', "unterminated string", 17),
        ("&& outcome=success", "expected outcome", 1),
    ],
)
def test_errors_have_message_and_column(text: str, message: str, column: int) -> None:
    with pytest.raises(ConditionError) as info:
        parse_condition(text)
    assert message in info.value.message
    assert info.value.column == column
    assert isinstance(info.value, PipelineError)
