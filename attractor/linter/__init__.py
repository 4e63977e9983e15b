"""Pipeline lint: rules that check a parsed graph before anything runs.

``validate(graph)`` runs every registered rule and returns all diagnostics,
sorted by position; ``validate_or_raise`` raises ValidationError on errors;
``prepare(source)`` parses, transforms and validates in one call.
"""

from __future__ import annotations

from attractor.errors import Diagnostic
from attractor.linter.base import register_known_type
from attractor.linter.prepare import prepare
from attractor.linter.registry import (
    LintRule,
    builtin_rules,
    register_rule,
    validate,
    validate_or_raise,
)

__all__ = [
    "Diagnostic",
    "LintRule",
    "builtin_rules",
    "prepare",
    "register_known_type",
    "register_rule",
    "validate",
    "validate_or_raise",
]
