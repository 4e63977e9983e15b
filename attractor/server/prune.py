"""Pruning runs from the page: the ones a person picked, or every run older than an age.

``POST /pipelines/prune`` takes ``{"ids": [RUN_ID, ...]}`` or
``{"older_than": "7d"}``. Runs are deleted by :mod:`attractor.runview.prune`,
the one place a run is deleted: a run still going (driven by this server, or by
another process that holds its lock) is never deleted; nor is anything that is
not a run directory under the root. The worktrees and branches of a deleted
worktree run go with it. What could not be deleted is reported, run by run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attractor.dot.schema import DURATION_FORM, parse_duration
from attractor.runview.listing import list_runs
from attractor.runview.prune import older_than
from attractor.server.body import Problem

#: The most runs one request may prune by name.
MAX_PRUNE = 1000


def prune_ids(body: dict[str, Any], root: Path) -> list[str]:
    """The runs the request names: its ``ids``, or those under ``root`` ended more than
    ``older_than`` ago.

    Raises:
        Problem: 400 when the body names neither, or names them wrongly.
    """
    ids, age = body.get("ids"), body.get("older_than")
    if (ids is None) == (age is None):
        raise Problem(
            400, 'name the runs to delete: {"ids": ["RUN_ID", ...]} or {"older_than": "7d"}'
        )
    if age is not None:
        try:
            seconds = parse_duration(str(age)) if isinstance(age, str) else 0.0
        except ValueError:
            seconds = 0.0
        if seconds <= 0:
            shown = str(age)[:40]
            raise Problem(400, f'"older_than": {shown!r} is not a duration; {DURATION_FORM}')
        return [run.id for run in older_than(list_runs(root, top=False), seconds)]
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise Problem(400, 'name the runs to delete: {"ids": ["RUN_ID", ...]}')
    if len(ids) > MAX_PRUNE:
        raise Problem(400, f"at most {MAX_PRUNE} runs at a time; {len(ids)} were named")
    return list(dict.fromkeys(ids))
