"""Pruning runs: the run directories a person picked, deleted once their runs are over.

A run still going (driven by this server, or by another process that holds its
lock) is never deleted; nor is anything that is not a run directory under the
root. What could not be deleted is reported with the reason, run by run.
Workspaces a run made (once runs have them) go with it: this is the one place
that deletes a run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from attractor.run_status import RunStatus
from attractor.runview.listing import driver_alive, is_run_dir, run_status

#: The most runs one request may prune.
MAX_PRUNE = 1000


def prune_run(path: Path, active: bool) -> str:
    """Delete the run directory ``path``; "" when done, else why it was kept."""
    if active or (run_status(path) == RunStatus.RUNNING and driver_alive(path)):
        return "the run is still going; cancel it first"
    if path.is_symlink() or not path.is_dir() or not is_run_dir(path):
        return "not a run directory"
    try:
        shutil.rmtree(path)
    except OSError as exc:
        return f"cannot delete it: {exc.strerror or exc}"
    return ""
