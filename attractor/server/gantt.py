"""A run's timeline as the page draws it: every attempt, the waits at gates, the branches.

The attempts are :func:`attractor.runview.timeline.timeline`'s rows (one per
attempt of each visit of each node, with its start, duration, status and
folder); the waits and the branches are read from the same ``events.jsonl``:
a gate's wait runs from its ``interview_started`` to the answer (or the
timeout), a branch from ``parallel_branch_started`` to
``parallel_branch_completed``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from attractor.runview.inventory import read_events
from attractor.runview.listing import run_status
from attractor.runview.timeline import timeline


def gantt(path: Path) -> dict[str, Any]:
    """``{"attempts", "waits", "branches", "now", "status"}`` of the run in ``path``."""
    waits, branches = _spans(path)
    return {
        "attempts": [row.to_json() for row in timeline(path)],
        "waits": waits,
        "branches": branches,
        "now": time.time(),
        "status": run_status(path),
    }


def _spans(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    waits: list[dict[str, Any]] = []
    branches: list[dict[str, Any]] = []
    open_wait: dict[str, Any] | None = None
    open_branches: dict[tuple[str, str], dict[str, Any]] = {}
    for _, event in read_events(path):
        kind, ts = event.get("type"), _ts(event)
        if kind == "interview_started":
            open_wait = {"node": str(event.get("stage", "")), "start": ts, "end": None}
            open_wait["question"] = str(event.get("question", ""))
            waits.append(open_wait)
        elif kind in ("interview_completed", "interview_timeout") and open_wait is not None:
            open_wait["end"] = ts
            open_wait["answer"] = str(event.get("answer", "timeout"))
            open_wait = None
        elif kind == "parallel_branch_started":
            key = (str(event.get("node")), str(event.get("branch")))
            span = {"parallel": key[0], "branch": key[1], "start": ts, "end": None}
            span["status"] = "running"
            open_branches[key] = span
            branches.append(span)
        elif kind == "parallel_branch_completed":
            span = open_branches.pop((str(event.get("node")), str(event.get("branch"))), {})
            if span:
                span["end"] = ts
                span["status"] = "success" if event.get("success") else "fail"
    return waits, branches


def _ts(event: dict[str, Any]) -> float | None:
    value = event.get("ts")
    return float(value) if isinstance(value, int | float) else None
