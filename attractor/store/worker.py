"""Which cluster node runs a run or a branch: the worker file of a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attractor.errors import InputFileError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import read_bounded

#: Which cluster node runs a run (in its run directory) or a branch (in the stage
#: directory of its first node): ``{"node_id": ..., "host": ...}``.
WORKER_FILE = "worker.json"
#: A worker file names a node and a host: a few hundred bytes.
_WORKER_LIMIT = 64 * 1024


def worker_of(run_dir: Path) -> dict[str, Any] | None:
    """The cluster node that runs (or ran) the run in ``run_dir``; None for a local run."""
    path = run_dir / WORKER_FILE
    try:
        data = loads_json(read_bounded(path, _WORKER_LIMIT, "worker file"), path, "worker file")
    except (InputFileError, ValueError):
        return None
    return data if isinstance(data, dict) else None
