"""Manager-loop rules: the child pipeline and the loop's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.linter.prepare import prepare
from tests.linter.lintkit import HEAD, by_rule, lint_body


def test_a_manager_without_a_child_is_an_error() -> None:
    (error,) = by_rule(lint_body("m [shape=house]\nstart -> m -> exit"), "manager_child")
    assert error.severity == "error" and error.node == "m"
    assert error.fix and "stack.child_dotfile" in error.fix


def test_a_house_whose_edges_are_labelled_choices_is_told_to_be_a_hexagon() -> None:
    body = (
        'm [shape=house, prompt="Safe to apply?"]\nstart -> m\n'
        'm -> exit [label="approved"]\nm -> start [label="denied"]'
    )
    (error,) = by_rule(lint_body(body), "manager_child")
    assert error.severity == "error"
    assert "labelled choices" in error.message
    assert error.fix == "for a human gate write shape=hexagon on m"


def test_a_house_routed_by_conditions_keeps_the_child_fix() -> None:
    body = 'm [shape=house]\nstart -> m\nm -> exit [label="ok", condition="outcome=success"]'
    body += '\nm -> start [label="again", condition="outcome=fail"]'
    (error,) = by_rule(lint_body(body), "manager_child")
    assert error.fix and "stack.child_dotfile" in error.fix


def test_a_child_file_that_is_missing_is_a_warning_found_beside_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    body = 'm [shape=house, stack.child_dotfile="child.dot"]\nstart -> m -> exit\n}\n'
    pipeline = tmp_path / "sub" / "p.dot"
    pipeline.write_text(HEAD + body)
    (warning,) = by_rule(prepare(pipeline)[1], "manager_child")
    assert warning.severity == "warning" and "child.dot" in warning.message
    (tmp_path / "sub" / "child.dot").write_text("digraph c { }")
    assert by_rule(prepare(pipeline)[1], "manager_child") == []


@pytest.mark.parametrize(
    ("attrs", "needle"),
    [
        ('manager.actions="observe,poke"', "unknown action poke"),
        ('manager.stop_condition="a=b=c"', "manager.stop_condition on m: column"),
        ("stack.child_autostart=false", "false is not supported"),
    ],
)
def test_manager_settings_are_checked(attrs: str, needle: str) -> None:
    body = f'm [shape=house, stack.child_dotfile="c.dot", {attrs}]\nstart -> m -> exit'
    (error,) = by_rule(lint_body(body), "manager_settings")
    assert error.severity == "error" and needle in error.message


def test_poll_interval_may_be_zero_but_not_negative() -> None:
    from attractor.dot.schema import parse_interval

    assert parse_interval("0s") == 0.0 and parse_interval("0") == 0.0
    assert parse_interval("1ms") == 0.001
    for bad in ("-1s", "soon", ""):
        try:
            parse_interval(bad)
        except ValueError as error:
            assert "or 0s" in str(error)
        else:
            raise AssertionError(bad)
