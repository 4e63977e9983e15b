"""Lint diagnostics: what is wrong, where, and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Diagnostic:
    """One finding of a lint rule (or a syntax error, with rule ``syntax``)."""

    rule: str
    severity: Severity
    message: str
    file: str
    line: int
    column: int
    node: str | None = None
    edge: tuple[str, str] | None = None
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``attractor lint --format json`` element (exactly these keys)."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "node": self.node,
            "edge": list(self.edge) if self.edge is not None else None,
            "fix": self.fix,
        }

    def format_text(self) -> str:
        """``FILE:LINE:COL: SEVERITY RULE: MESSAGE`` plus a ``fix:`` line when known."""
        text = f"{self.file}:{self.line}:{self.column}: {self.severity} {self.rule}: {self.message}"
        if self.fix:
            text += f"\n    fix: {self.fix}"
        return text

    @property
    def is_error(self) -> bool:
        return self.severity == "error"
