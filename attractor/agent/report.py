"""The agent's own verdict on its stage: the ``report_outcome`` tool and its text fallback.

A model that can call tools reports through ``report_outcome``; the session
ends after the turn that reported. A model that answers in text (or a final,
tool-free turn) may end its last message with a JSON object carrying the same
fields, which :func:`report_from_text` finds. No report means success.

The fields are those of the status-file contract: ``outcome``,
``preferred_label``, ``suggested_next_ids``, ``context_updates``, ``notes``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import field
from typing import Any

from attractor.llm.types import ToolDefinition
from attractor.valueclass import frozen

TOOL_NAME = "report_outcome"
#: What a model may report (``skipped`` is the engine's, not the model's).
OUTCOMES = ("success", "partial_success", "retry", "fail")
#: Only the tail of a long final message is searched for a JSON report...
_TEXT_TAIL = 20_000
#: ...and only from its last few opening braces (each try may scan to the end).
_MAX_TRIES = 64


@frozen
class OutcomeReport:
    """What the model said about its own stage."""

    outcome: str
    preferred_label: str = ""
    suggested_next_ids: tuple[str, ...] = ()
    context_updates: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    #: "tool" or "text": how the report arrived (for the audit trail).
    via: str = "tool"


class ReportError(ValueError):
    """The report's arguments do not fit the contract; the text goes back to the model."""


class ReportTaker:
    """Keeps the session's report: the last ``report_outcome`` call that fits the contract."""

    def __init__(self) -> None:
        self.report: OutcomeReport | None = None

    def take(self, arguments: dict[str, Any]) -> str:
        """Record a ``report_outcome`` call's ``arguments``; the answer the model gets back."""
        try:
            self.report = parse_report(arguments)
        except ReportError as error:
            return f"report not recorded: {error}. Call {TOOL_NAME} again with valid fields."
        choice = f", label {self.report.preferred_label!r}" if self.report.preferred_label else ""
        return f"outcome recorded: {self.report.outcome}{choice}"


def report_tool(choices: tuple[str, ...]) -> ToolDefinition:
    """The tool definition; ``choices`` are the node's outgoing edge labels."""
    label: dict[str, Any] = {"type": "string", "description": "the outgoing edge to take"}
    if choices:
        label["description"] += ": one of " + "; ".join(choices)
    return ToolDefinition(
        TOOL_NAME,
        "Report how this stage ended, once the work is done: this ends your turn loop. "
        "outcome: success, partial_success (done with gaps), retry (try this stage again) "
        "or fail. preferred_label picks where the pipeline goes next when the stage "
        "offers choices. context_updates are values later stages can read.",
        {
            "type": "object",
            "properties": {
                "outcome": {"type": "string", "enum": list(OUTCOMES)},
                "preferred_label": label,
                "suggested_next_ids": {"type": "array", "items": {"type": "string"}},
                "context_updates": {"type": "object"},
                "notes": {"type": "string", "description": "why, in a sentence or two"},
            },
            "required": ["outcome"],
        },
    )


def parse_report(
    data: dict[str, Any], *, via: str = "tool", outcomes: tuple[str, ...] = OUTCOMES
) -> OutcomeReport:
    """An :class:`OutcomeReport` from tool arguments or a JSON object.

    The same check serves a ``status.json`` a node writes (``via="file"``,
    where ``skipped`` is allowed too).

    Raises:
        ReportError: a field has the wrong type or ``outcome`` is not one of ``outcomes``.
    """
    outcome = str(data.get("outcome", "")).strip().lower()
    if outcome not in outcomes:
        raise ReportError(f"outcome must be one of {', '.join(outcomes)}; got {outcome!r}")
    next_ids = data.get("suggested_next_ids") or []
    if not isinstance(next_ids, list) or not all(isinstance(x, str) for x in next_ids):
        raise ReportError("suggested_next_ids must be a list of node ids (strings)")
    updates = data.get("context_updates") or {}
    if not isinstance(updates, dict):
        raise ReportError("context_updates must be an object of key: value pairs")
    label = data.get("preferred_label") or ""
    notes = data.get("notes") or ""
    if not isinstance(label, str) or not isinstance(notes, str):
        raise ReportError("preferred_label and notes must be strings")
    return OutcomeReport(
        outcome, label.strip(), tuple(next_ids), {str(k): v for k, v in updates.items()}, notes, via
    )


def report_from_text(text: str) -> OutcomeReport | None:
    """The report a message ends with, as a JSON object with an ``outcome`` field.

    Lenient: the object may sit in a fenced code block or after prose. The last
    object that parses and carries a valid ``outcome`` wins; anything else is
    not a report (None), never an error.
    """
    value = trailing_object(text, lambda obj: "outcome" in obj)
    if value is None:
        return None
    try:
        return parse_report(value, via="text")
    except ReportError:
        return None


def trailing_object(text: str, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The last JSON object in ``text`` (fenced or after prose) for which ``wanted`` holds."""
    tail = text[-_TEXT_TAIL:]
    decoder = json.JSONDecoder()
    start = tail.rfind("{")
    for _ in range(_MAX_TRIES):
        if start == -1:
            break
        try:
            value = decoder.raw_decode(tail, start)[0]
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict) and wanted(value):
            return value
        start = tail.rfind("{", 0, start)
    return None
