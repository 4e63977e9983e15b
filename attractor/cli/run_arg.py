"""RUN_DIR as commands take it: a run directory's path, or a run's id.

``attractor runs`` lists runs by id (the run directory's name); a command that
takes RUN_DIR accepts that id too, for a run under the current folder's
``.attractor/runs/``. A path that exists is always taken as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Where a run's id is looked up (the default ``--logs-dir`` puts runs there).
RUNS_FOLDER = Path(".attractor") / "runs"


def run_dir_of(value: str) -> Path:
    """The run directory ``value`` names (see the module docstring)."""
    path = Path(value)
    if os.path.lexists(path) or os.sep in value or value in (".", ".."):
        return path
    by_id = RUNS_FOLDER / value
    return by_id if by_id.is_dir() else path


def missing(value: str) -> str | None:
    """The message for a RUN_DIR that is neither a path nor a run's id (None: it is one)."""
    if os.path.lexists(run_dir_of(value)):
        return None
    return (
        f"{value}: no such run directory (nor a run id under {RUNS_FOLDER}); "
        "pass the directory attractor run printed, or list the runs with attractor runs"
    )
