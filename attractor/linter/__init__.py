"""Pipeline lint: rules that check a parsed graph before anything runs.

``validate(graph)`` runs every registered rule and returns all diagnostics,
sorted by position; ``validate_or_raise`` raises ValidationError on errors;
``prepare(source)`` parses, transforms and validates in one call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attractor.errors import Diagnostic

if TYPE_CHECKING:
    from attractor.linter.base import register_known_type
    from attractor.linter.prepare import prepare
    from attractor.linter.registry import (
        LintRule,
        builtin_rules,
        register_rule,
        validate,
        validate_or_raise,
    )

#: Names imported with their module on first use: importing a submodule (the
#: CLI's ``linter.handler_types``) must not load the parser and every rule.
_LAZY = {
    "prepare": "attractor.linter.prepare",
    "register_known_type": "attractor.linter.base",
    "LintRule": "attractor.linter.registry",
    "builtin_rules": "attractor.linter.registry",
    "register_rule": "attractor.linter.registry",
    "validate": "attractor.linter.registry",
    "validate_or_raise": "attractor.linter.registry",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
