"""Pipeline lint: rules that check a parsed graph before anything runs.

``validate(graph)`` runs every registered rule and returns all diagnostics,
sorted by position; ``validate_or_raise`` raises ValidationError on errors.
"""

from __future__ import annotations

from attractor.pipeline.lint.registry import (
    LintRule,
    builtin_rules,
    register_known_type,
    register_rule,
    validate,
    validate_or_raise,
)

__all__ = [
    "LintRule",
    "builtin_rules",
    "register_known_type",
    "register_rule",
    "validate",
    "validate_or_raise",
]
