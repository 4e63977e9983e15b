"""What a resume request asks: go on, retry the failed node, or go back to a node.

``POST /pipelines/{id}/resume`` takes ``{}`` (as ``attractor resume``),
``{"retry_failed": true}`` (``--retry-failed``) or ``{"from": "NODE"}``
(``--from NODE``), with optional ``"settings"``; the engine's continuation
(:mod:`attractor.engine.continuation`) does the rest.
"""

from __future__ import annotations

from typing import Any

from attractor.launch import Continuation
from attractor.run_status import RunStatus
from attractor.server.body import Problem

#: What a resume request may say.
_RESUME_KEYS = frozenset({"settings", "retry_failed", "from"})
_RESUME_HOW = (
    'resume a stopped run with {}, a failed one with {"retry_failed": true}, '
    'or go back to a node the run entered with {"from": "NODE"}'
)


def continuation_of(body: dict[str, Any]) -> Continuation | None:
    """How a resume request continues its run: as ``resume``, ``--retry-failed`` or ``--from``.

    Raises:
        Problem: 400 for an unknown field, a wrong type, or both ways at once.
    """
    unknown = sorted(set(body) - _RESUME_KEYS)
    if unknown:
        raise Problem(400, f"unknown field(s) {', '.join(unknown)}; {_RESUME_HOW}")
    retry, node = body.get("retry_failed", False), body.get("from")
    if not isinstance(retry, bool):
        raise Problem(400, '"retry_failed" must be true or false')
    if node is not None and (not isinstance(node, str) or not node.strip()):
        raise Problem(400, '"from" must be the id of a node of the run')
    if retry and node is not None:
        raise Problem(400, '"retry_failed" and "from" exclude each other; pick one')
    if not retry and node is None:
        return None
    return Continuation(retry_failed=retry, from_node=node.strip() if node else None)


def check_resumable(run_id: str, status: str, how: Continuation | None, active: bool) -> None:
    """Refuse a resume the run's state cannot take, saying which one it can.

    Raises:
        Problem: 409 while the run goes on, for a plain resume of a run that
            ended, and for retrying a run that did not fail.
    """
    if active or status == RunStatus.RUNNING:
        raise Problem(409, f"run {run_id} is still running; cancel it first")
    said: dict[str, str] = {
        RunStatus.SUCCESS: "succeeded",
        RunStatus.FAIL: "failed",
        RunStatus.RESTARTED: "restarted elsewhere",
    }
    if how is None and status in said:
        raise Problem(409, f"run {run_id} {said[status]}; nothing to resume: {_RESUME_HOW}")
    if how is not None and how.retry_failed and status != RunStatus.FAIL:
        raise Problem(409, f"run {run_id} is {status}, not failed; {_RESUME_HOW}")
