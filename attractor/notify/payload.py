"""What a notification says: the run's events turned into the payloads the user picked.

The JSON payload (``notify_format = "json"``)::

    {"event": "run_failed", "run_id": "20261125T050000Z-build", "pipeline": "build",
     "status": "fail", "node": "tests", "message": "build failed at tests: ...",
     "url": "http://127.0.0.1:8700/#/run/20261125T050000Z-build",
     "run_dir": "/abs/.attractor/runs/20261125T050000Z-build",
     "time": "2026-11-25T05:00:07Z", "delivery": "9f0c...", "details": {...}}

``url`` is null unless ``attractor serve`` runs the pipeline. ``details`` holds
what the event adds (the question of a waiting gate, the answer and who gave
it, the error, the duration). The Slack format (``notify_format = "slack"``) is
an incoming-webhook message: ``{"text": "..."}`` saying the same in a line.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from attractor import events as ev
from attractor.run_status import RunStatus
from attractor.valueclass import frozen, mutable

#: Characters of a gate's review material a payload quotes.
REVIEW_CHARS = 1000
#: The run's status once it ended, by final event.
_ENDED = {
    ev.PipelineCompleted: RunStatus.SUCCESS,
    ev.PipelineFailed: RunStatus.FAIL,
    ev.PipelineTimedOut: RunStatus.TIMED_OUT,
}
_SIGNALS = {
    "SIGINT": RunStatus.INTERRUPTED,
    "SIGTERM": RunStatus.TERMINATED,
    "SIGHUP": RunStatus.HANGUP,
}


@mutable
class RunFacts:
    """What the notifier has learnt of the run from its events so far."""

    run_id: str = ""
    pipeline: str = ""
    run_dir: str = ""
    status: RunStatus = RunStatus.RUNNING
    #: The node running now (the last one started), or the last that failed for good.
    node: str | None = None
    failed_node: str | None = None


@frozen
class Notice:
    """One notification: its event name and the payload to send."""

    event: str
    payload: dict[str, Any] = field(default_factory=dict)

    def body(self, fmt: str) -> bytes:
        data = slack_message(self.payload) if fmt == "slack" else self.payload
        return json.dumps(data, ensure_ascii=False).encode("utf-8")


class Notices:
    """Follows a run's events and says which notifications each one makes."""

    def __init__(self, chosen: tuple[str, ...], link: Callable[[str], str] | None = None) -> None:
        self.chosen = frozenset(chosen)
        self.facts = RunFacts()
        self._link = link

    def of(self, event: ev.Event) -> list[Notice]:
        """The notifications ``event`` makes (none for most events)."""
        made: list[tuple[str, str, dict[str, Any]]] = []
        facts = self.facts
        if isinstance(event, ev.PipelineStarted):
            facts.run_id, facts.pipeline = event.run_id, event.name
            facts.run_dir = str(Path(event.run_dir).resolve())
            facts.status, facts.node, facts.failed_node = RunStatus.RUNNING, None, None
            verb = "resumed" if event.resumed else "started"
            made.append(("run_started", f"{event.name} {verb}", {"resumed": event.resumed}))
        elif isinstance(event, ev.StageStarted):
            facts.node = event.name
        elif isinstance(event, ev.StageFailed) and not event.will_retry:
            facts.failed_node = facts.node = event.name
            made.append(
                ("stage_failed", f"{event.name} failed: {event.error}", {"error": event.error})
            )
        elif isinstance(event, ev.InterviewStarted):
            facts.node = event.stage
            made.append(_gate_waiting(event))
        elif isinstance(event, ev.InterviewCompleted):
            made.append(_gate_answered(event))
        else:
            made += self._ended(event)
        return [
            self._notice(name, text, details) for name, text, details in made if name in self.chosen
        ]

    def _ended(self, event: ev.Event) -> list[tuple[str, str, dict[str, Any]]]:
        facts = self.facts
        if isinstance(event, ev.PipelineInterrupted):
            facts.status = _SIGNALS.get(event.signal, RunStatus.INTERRUPTED)
            kind = "run_stopped"
            where = f" while running {event.node}" if event.node else ""
            text = f"{facts.pipeline} stopped ({facts.status}){where}"
            facts.node = event.node
            details: dict[str, Any] = {"signal": event.signal, "duration": event.duration}
        elif type(event) in _ENDED:
            facts.status = _ENDED[type(event)]
            kind = "run_succeeded" if facts.status == RunStatus.SUCCESS else "run_failed"
            text, details = self._outcome(event)
        else:
            return []
        return [(kind, text, details), ("run_finished", text, details)]

    def _outcome(self, event: ev.Event) -> tuple[str, dict[str, Any]]:
        facts = self.facts
        duration = float(getattr(event, "duration", 0.0))
        if isinstance(event, ev.PipelineFailed):
            facts.node = facts.failed_node or facts.node
            where = f" at {facts.node}" if facts.node else ""
            return f"{facts.pipeline} failed{where}: {event.error}", {
                "error": event.error,
                "duration": duration,
            }
        if isinstance(event, ev.PipelineTimedOut):
            facts.node = event.node
            where = f" while running {event.node}" if event.node else ""
            return f"{facts.pipeline} timed out after {event.timeout:g}s{where}", {
                "timeout": event.timeout,
                "duration": duration,
            }
        facts.node = None
        return f"{facts.pipeline} succeeded in {duration:.1f}s", {"duration": duration}

    def _notice(self, name: str, message: str, details: dict[str, Any]) -> Notice:
        facts = self.facts
        url = self._link(facts.run_id) if self._link is not None and facts.run_id else None
        payload = {
            "event": name,
            "run_id": facts.run_id,
            "pipeline": facts.pipeline,
            "status": facts.status,
            "node": facts.node,
            "message": message,
            "url": url,
            "run_dir": facts.run_dir,
            "time": datetime.fromtimestamp(time.time(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "delivery": uuid.uuid4().hex,
            "details": details,
        }
        return Notice(name, payload)


def _gate_waiting(event: ev.InterviewStarted) -> tuple[str, str, dict[str, Any]]:
    review = event.review[:REVIEW_CHARS] + ("…" if len(event.review) > REVIEW_CHARS else "")
    text = f"gate {event.stage} is waiting for an answer: {event.question}"
    return "gate_waiting", text, {"question": event.question, "review": review}


def _gate_answered(event: ev.InterviewCompleted) -> tuple[str, str, dict[str, Any]]:
    shown = event.label or event.answer
    who = f" by {event.answered_by}" if event.answered_by else ""
    comment = f": {event.comment}" if event.comment else ""
    details = {
        "question": event.question,
        "answer": event.answer,
        "label": event.label,
        "answered_by": event.answered_by,
        "comment": event.comment,
    }
    return "gate_answered", f"gate {event.stage} answered {shown}{who}{comment}", details


def slack_message(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as a Slack incoming-webhook message (mrkdwn text)."""
    text = f"*{_escape(payload['pipeline'])}* `{payload['run_id']}`: {_escape(payload['message'])}"
    if payload.get("url"):
        text += f"\n<{payload['url']}|Open the run>"
    return {"text": text}


def _escape(text: str) -> str:
    """Slack's three control characters in text, escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
