"""The status-file contract: a ``status.json`` a node writes into its stage directory.

A tool command (through ``$ATTRACTOR_STAGE_DIR``) or any handler may write
``status.json`` with the fields ``outcome``, ``preferred_label``,
``suggested_next_ids``, ``context_updates`` and ``notes``. When the file is new
or changed after the node ran, it decides the node's outcome and route; the
handler's own context values (``tool.output``...) are kept beneath its updates.
A file that does not fit the contract fails the node with a reason that quotes
the file and the problem. The engine never overwrites such a file: its own
record of the node goes to ``status.engine.json`` beside it.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from attractor.errors import InputFileError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import read_bounded
from attractor.handlers.outcome import Outcome, StageStatus

STATUS = "status.json"
ENGINE_RECORD = "status.engine.json"
#: Written by the node: the file drives the outcome (value of details["status_file"]).
BY_NODE = "written by the node"
_OUTCOMES = ("success", "partial_success", "retry", "fail", "skipped")
_LIMIT = 4 * 1024 * 1024

Signature = tuple[int, int, int] | None


def signature(stage_dir: Path) -> Signature:
    """What identifies the current status.json (None when there is none)."""
    try:
        st = os.stat(f"{stage_dir}/{STATUS}")  # a str: a Path costs more than the stat
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def written_by_node(stage_dir: Path, before: Signature) -> bool:
    now = signature(stage_dir)
    return now is not None and now != before


def apply(stage_dir: Path, outcome: Outcome | None) -> Outcome:
    """The outcome the node's status.json gives, over the handler's own ``outcome``."""
    path = stage_dir / STATUS
    try:
        data = _load(path)
        from_file = _parse(data)
    except (OSError, ValueError) as problem:
        reason = f"{path}: {problem}; write a JSON object with an 'outcome' field"
        return replace(Outcome.fail(reason), details={"status_file": BY_NODE})
    base = outcome.context_updates if outcome is not None else {}
    details = outcome.details if outcome is not None else {}
    return replace(
        from_file,
        context_updates={**base, **from_file.context_updates},
        details={**details, "status_file": BY_NODE},
    )


def _load(path: Path) -> Any:
    try:
        return loads_json(
            read_bounded(path, _LIMIT, "status file", follow=False), path, "status file"
        )
    except InputFileError as error:
        raise ValueError(error.reason) from None
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None


def _parse(data: Any) -> Outcome:
    if not isinstance(data, dict):
        raise ValueError("must hold a JSON object")
    # Here only: few nodes write a status file, and the parser's module is large.
    from attractor.agent.report import parse_report

    report = parse_report(data, via="file", outcomes=_OUTCOMES)
    reason = data.get("failure_reason") or ""
    if not isinstance(reason, str):
        raise ValueError("failure_reason must be a string")
    status = StageStatus(report.outcome)
    failing = status.is_failure
    return Outcome(
        status,
        preferred_label=report.preferred_label,
        suggested_next_ids=report.suggested_next_ids,
        context_updates=report.context_updates,
        notes=report.notes,
        failure_reason=(reason or report.notes or f"status.json says {status.value}")
        if failing
        else "",
    )
