from __future__ import annotations

from pathlib import Path

import pytest

from attractor.dot.conditions import (
    Clause,
    condition_keys,
    evaluate,
    is_truthy,
    parse_condition,
    resolve_key,
    special_key_typo,
)
from attractor.engine.routing import evaluate_condition
from attractor.errors import ConditionError, PipelineError
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from tests.cli.runkit import completed_stages, invoke, only_run_dir, write


def test_parses_clauses_with_columns() -> None:
    parsed = parse_condition('outcome=success && context.tests.passed!="no way"')
    assert parsed.clauses == (
        Clause("outcome", "=", "success", 1),
        Clause("context.tests.passed", "!=", "no way", 20),
    )


def test_parses_unqualified_keys_and_bare_keys() -> None:
    parsed = parse_condition("outcome=success && ready=true && context.ready &&  tool.exit_code")
    assert parsed.clauses == (
        Clause("outcome", "=", "success", 1),
        Clause("ready", "=", "true", 20),
        Clause("context.ready", None, "", 34),
        Clause("tool.exit_code", None, "", 52),
    )
    assert parse_condition("tests_passed").clauses == (Clause("tests_passed", None, "", 1),)
    assert parse_condition("  preferred_label  ").clauses == (
        Clause("preferred_label", None, "", 3),
    )


def test_condition_keys_are_the_keys_as_written() -> None:
    assert condition_keys("outcome=fail && ready && context.x!=y") == {
        "outcome",
        "ready",
        "context.x",
    }
    assert condition_keys("tests_passed") == {"tests_passed"}


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
        ("context.missing!=x", True),  # missing keys are the empty string
        ("context.graph.goal=ship", True),  # full dotted key first
        ("outcome=success && context.count=3 && preferred_label=Fix", True),
        ("outcome=success && context.count=4", False),
        # Unqualified keys read the context directly.
        ("tests_passed=true", True),
        ("count!=3", False),
        ("missing!=x", True),
        ("outcome=success && count=3", True),
        ("graph.goal=build", True),  # no "context." prefix is added
        ("context.graph.goal=build", False),
    ],
)
def test_evaluate(text: str, expected: bool) -> None:
    context = Context(
        {"tests_passed": True, "count": 3, "context.graph.goal": "ship", "graph.goal": "build"}
    )
    assert evaluate(text, outcome="success", preferred_label="Fix", context=context) is expected


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("outcome", "partial_success"),
        ("preferred_label", "Approve"),
        ("context.both", "qualified"),  # the full key wins...
        ("context.plain", "p"),  # ...then the key without its prefix
        ("context.missing", ""),
        ("both", "unqualified"),  # a plain key is looked up as written
        ("plain", "p"),
        ("missing", ""),
        ("flag", "false"),
        ("none", ""),
        ("zero", "0"),
    ],
)
def test_resolve_key(key: str, expected: str) -> None:
    context = Context(
        {
            "context.both": "qualified",
            "both": "unqualified",
            "plain": "p",
            "flag": False,
            "none": None,
            "zero": 0,
        }
    )
    assert resolve_key(key, "partial_success", "Approve", context) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        ("true", True),
        ("yes", True),
        ("1", True),
        (1, True),
        ("x", True),
        (" false-ish ", True),
        ("no", True),  # only "", "0" and "false" are false
        ("0.0", True),
        ([], True),  # rendered as "[]"
        (False, False),
        ("false", False),
        ("False", False),
        (" FALSE\n", False),
        ("0", False),
        (0, False),
        ("", False),
        ("  \n", False),
        (None, False),
    ],
)
def test_bare_key_truthiness(value: object, expected: bool) -> None:
    context = Context({"ready": value})
    for text in ("ready", "context.ready"):
        assert evaluate(text, outcome="success", preferred_label="", context=context) is expected


def test_a_missing_bare_key_is_false() -> None:
    assert not evaluate("ready", outcome="success", preferred_label="", context=Context())
    assert not is_truthy("")


def test_bare_preferred_label_tests_for_a_label() -> None:
    def holds(label: str) -> bool:
        return evaluate(
            "preferred_label", outcome="success", preferred_label=label, context=Context()
        )

    assert holds("Fix")
    assert not holds("")


def test_bare_keys_combine_with_and() -> None:
    def holds(status: str, **values: object) -> bool:
        return evaluate(
            "outcome=success && ready && context.tests_passed",
            outcome=status,
            preferred_label="",
            context=Context(values),
        )

    assert holds("success", ready="true", tests_passed=True)
    assert not holds("fail", ready="true", tests_passed=True)
    assert not holds("success", ready="true", tests_passed=False)
    assert not holds("success", tests_passed=True)


def test_evaluate_condition_takes_an_outcome() -> None:
    outcome = Outcome(StageStatus.PARTIAL_SUCCESS, preferred_label="Approve")
    context = Context({"ready": "true"})
    assert evaluate_condition("outcome=partial_success", outcome, context)
    assert evaluate_condition("preferred_label=Approve", outcome, context)
    assert evaluate_condition("outcome=partial_success && ready", outcome, context)
    assert not evaluate_condition("outcome=success", outcome, context)
    assert not evaluate_condition("ready && other", outcome, context)


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("outcome==success", "use '='", 8),
        ("ready == true", "use '='", 7),
        ("outcome", "expected '=' or '!=' after outcome", 8),
        ("outcome && ready", "expected '=' or '!=' after outcome", 9),
        ("outcome-success", "expected '=', '!=', '&&' or end of condition after outcome", 8),
        ("ready set", "found 'set'", 7),
        ("ready || done", "found '|| done'", 7),
        ("context.", "expected a name after 'context.'", 8),
        ("context.missing=", "expected a value after '='", 17),
        ("ready=", "expected a value after '='", 7),
        ("outcome=sucess", "did you mean success?", 1),
        ("ready && outcome=sucess", "did you mean success?", 10),
        ("outcome=success &&", "expected a key", 19),
        ("ready &&", "expected a key", 9),
        ("ready && && done", "expected a key", 10),
        ("outcome=success || outcome=fail", "expected '&&' or end", 17),
        ("ready=true false", "expected '&&' or end", 12),
        ('preferred_label="open', "unterminated string", 17),
        ("&& outcome=success", "expected a key", 1),
        ("=true", "expected a key", 1),
        ("!ready", "expected a key", 1),
        ("2fast", "expected a key", 1),
    ],
)
def test_errors_have_message_and_column(text: str, message: str, column: int) -> None:
    with pytest.raises(ConditionError) as info:
        parse_condition(text)
    assert message in info.value.message
    assert info.value.column == column
    assert isinstance(info.value, PipelineError)


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("outcom", "outcome"),
        ("outcomes", "outcome"),
        ("Outcome", "outcome"),
        ("prefered_label", "preferred_label"),
        ("outcome", None),
        ("preferred_label", None),
        ("ready", None),
        ("status", None),
        ("income", None),
        ("context.outcom", None),  # the prefix says a context key is meant
    ],
)
def test_special_key_typo(key: str, meant: str | None) -> None:
    assert special_key_typo(key) == meant


GATED = """\
digraph gated {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    check [shape=parallelogram, tool_command="true"]
    deploy [prompt="Deploy"]
    hold   [prompt="Hold"]
    start -> check
    check -> deploy [condition="ready"]
    check -> hold
    deploy -> done
    hold -> done
}
"""


@pytest.mark.parametrize(
    ("seed", "taken"),
    [
        (["--set", "ready=true"], "deploy"),
        (["--set", "ready=yes"], "deploy"),
        (["--set", "ready=false"], "hold"),
        (["--set", "ready=0"], "hold"),
        ([], "hold"),
    ],
)
def test_bare_key_condition_routes_a_cli_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: list[str], taken: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.dot", GATED)
    result = invoke(["run", "p.dot", "--backend", "simulate", "--logs-dir", "runs/r", *seed])
    assert result.exit_code == 0, result.output
    stages = completed_stages(only_run_dir(tmp_path / "runs"))
    assert stages[stages.index("check") + 1] == taken
    assert ({"deploy", "hold"} - {taken}).isdisjoint(stages)
