"""The resources rule: NAME=AMOUNT pairs with amounts above zero."""

from __future__ import annotations

import pytest

from attractor.dot.resources import parse_resources
from tests.linter.lintkit import by_rule, lint_body


@pytest.mark.parametrize(
    "value", ["cpu=4,gpu=1", "cpu=0.5", "bigmem=1, cpu=2", "node:10.0.0.5=0.01"]
)
def test_good_requests_pass(value: str) -> None:
    body = f't [shape=parallelogram, tool_command="true", resources="{value}"]\nstart -> t -> exit'
    found = lint_body(body)
    assert by_rule(found, "resources") == []
    assert by_rule(found, "unknown_attribute") == []


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("cpu:4", "'cpu:4' is not NAME=AMOUNT"),
        ("cpu=four", "amount must be a number above zero"),
        ("gpu=0", "amount must be a number above zero"),
        ("cpu=1,cpu=2", "cpu is given twice"),
        ("=3", "is not NAME=AMOUNT"),
    ],
)
def test_bad_requests_are_errors_with_a_fix(value: str, needle: str) -> None:
    body = f't [shape=parallelogram, tool_command="true", resources="{value}"]\nstart -> t -> exit'
    (error,) = by_rule(lint_body(body), "resources")
    assert error.severity == "error" and error.node == "t"
    assert needle in error.message
    assert error.fix and 'resources="cpu=4,gpu=1"' in error.fix


def test_parse_resources_reads_custom_names_and_fractions() -> None:
    assert parse_resources("cpu=4, gpu=1,bigmem=0.5") == {"cpu": 4.0, "gpu": 1.0, "bigmem": 0.5}
    assert parse_resources("") == {}
