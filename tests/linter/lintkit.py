"""Helpers for lint tests: lint DOT text and pick diagnostics by rule."""

from __future__ import annotations

from attractor.errors import Diagnostic
from attractor.linter.prepare import prepare

#: A minimal valid pipeline body around which tests add statements.
HEAD = """digraph T {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
"""


def lint(text: str) -> list[Diagnostic]:
    """All diagnostics of DOT ``text``."""
    return prepare(text, file="t.dot")[1]


def lint_body(body: str) -> list[Diagnostic]:
    """Diagnostics of HEAD + ``body`` + closing brace."""
    return lint(HEAD + body + "\n}\n")


def by_rule(found: list[Diagnostic], rule: str) -> list[Diagnostic]:
    return [d for d in found if d.rule == rule]
