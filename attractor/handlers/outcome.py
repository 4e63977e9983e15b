"""What a handler returns: a stage status plus routing hints and context updates."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import field
from typing import Any

from attractor.redact import Redactor
from attractor.valueclass import frozen


class StageStatus(enum.StrEnum):
    """The status of one node attempt (lowercase in files and conditions)."""

    SUCCESS = "success"
    PARTIAL_SUCCESS = "partial_success"
    RETRY = "retry"
    FAIL = "fail"
    SKIPPED = "skipped"

    @property
    def is_success(self) -> bool:
        return self in (StageStatus.SUCCESS, StageStatus.PARTIAL_SUCCESS)

    @property
    def is_failure(self) -> bool:
        """FAIL or RETRY: the attempt did not do its job (it carries a failure reason)."""
        return self in (StageStatus.FAIL, StageStatus.RETRY)


@frozen
class Outcome:
    """The result of executing a node handler."""

    status: StageStatus
    preferred_label: str = ""
    suggested_next_ids: tuple[str, ...] = ()
    context_updates: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    failure_reason: str = ""
    #: Extra fields for status.json only (turn budget, usage...), not the context.
    details: dict[str, Any] = field(default_factory=dict)
    #: Continue at this node instead of selecting an edge (a parallel node
    #: jumps to its fan-in once the branches are done). Not written to status.json.
    jump_to: str | None = None

    @classmethod
    def success(cls, notes: str = "", **updates: Any) -> Outcome:
        return cls(StageStatus.SUCCESS, notes=notes, context_updates=dict(updates))

    @classmethod
    def fail(cls, reason: str, **updates: Any) -> Outcome:
        return cls(StageStatus.FAIL, failure_reason=reason, context_updates=dict(updates))

    def redacted(self, redactor: Redactor) -> Outcome:
        """This outcome without secrets in its notes, reason, context updates and details."""
        notes, reason = redactor.text(self.notes), redactor.text(self.failure_reason)
        updates, details = redactor.value(self.context_updates), redactor.value(self.details)
        unchanged = (notes, reason, updates, details)
        if all(a is b for a, b in zip(unchanged, self._redactable(), strict=True)):
            return self
        return dataclasses.replace(
            self, notes=notes, failure_reason=reason, context_updates=updates, details=details
        )

    def _redactable(self) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
        return self.notes, self.failure_reason, self.context_updates, self.details

    def to_json(self) -> dict[str, Any]:
        """The status.json form (the spec's status-file contract)."""
        data: dict[str, Any] = {
            "outcome": self.status.value,
            "preferred_label": self.preferred_label,
            "suggested_next_ids": list(self.suggested_next_ids),
            "context_updates": self.context_updates,
            "notes": self.notes,
        }
        if self.failure_reason:
            data["failure_reason"] = self.failure_reason
        data.update(self.details)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        """Read a status.json written by a handler or an external tool."""
        return cls(
            status=StageStatus(str(data.get("outcome", "success")).lower()),
            preferred_label=str(data.get("preferred_label") or ""),
            suggested_next_ids=tuple(str(x) for x in data.get("suggested_next_ids") or ()),
            context_updates=dict(data.get("context_updates") or {}),
            notes=str(data.get("notes") or ""),
            failure_reason=str(data.get("failure_reason") or ""),
        )
