"""A run directory's files as the front ends find them: where each one is, and
the few questions about a run that are not a listing or an inventory.

The front ends read run directories through the read side alone (``runview``):
the layout itself is the store's (``store/rundir.py``); these names are what
they may rely on of it.
"""

from __future__ import annotations

from pathlib import Path

from attractor.store.rundir import (
    CHECKPOINT,
    MANIFEST,
    PIPELINE_COPY,
    RESULTS,
)
from attractor.store.rundir import never_started as never_started
from attractor.store.rundir import read_manifest as read_manifest
from attractor.store.worker import worker_of as worker_of

__all__ = [
    "checkpoint_file",
    "manifest_file",
    "never_started",
    "pipeline_copy",
    "read_manifest",
    "results_file",
    "worker_of",
]


def manifest_file(run_dir: Path) -> Path:
    """``manifest.json``: the run's name, status, times and spending."""
    return run_dir / MANIFEST


def checkpoint_file(run_dir: Path) -> Path:
    """``checkpoint.json``: there is one once the run has started."""
    return run_dir / CHECKPOINT


def pipeline_copy(run_dir: Path) -> Path:
    """The run's copy of its pipeline, which a resume runs."""
    return run_dir / PIPELINE_COPY


def results_file(run_dir: Path) -> Path:
    """``results.jsonl``: a summary row per node execution."""
    return run_dir / RESULTS
