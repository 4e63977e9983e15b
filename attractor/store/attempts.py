"""Every visit and attempt of a node keeps its own files.

A node's folder holds the files of its latest attempt, plainly (``prompt.md``,
``response.md``, ``status.json``, ``stdout.txt``, ``transcript.jsonl``, ...).
When another attempt of the node starts (a retry, or a later visit of a loop),
the files already there move into a folder beside them named after the attempt
that wrote them, ``vVISIT-aATTEMPT`` (``v1-a1``, ``v2-a1``, ``v2-a2``), so nothing
a node produced is overwritten. The first attempt of a node costs nothing
extra; later ones leave a small ``.attempt`` file naming themselves.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from attractor.errors import InputFileError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import read_bounded
from attractor.fileio.writes import atomic_write_text, make_run_dir
from attractor.store.worker import WORKER_FILE

MARKER = ".attempt"
#: A marker names a visit and an attempt: a few bytes.
_MARKER_LIMIT = 4096
#: Files of the node's folder that belong to no attempt: which cluster node runs
#: the branch that starts here.
_NOT_AN_ATTEMPTS = frozenset({WORKER_FILE})
_ARCHIVE = re.compile(r"^v\d+-a\d+(-\d+)?$")
#: A sub-pipeline's child run directories (``child``, ``child-v2-a1``): each
#: already belongs to one attempt by its name, and a resumed attempt must find
#: its child where it left it.
_CHILD_RUN = re.compile(r"^child(-v\d+-a\d+)?$")


def files_of(node_dir: Path, visit: int, attempt: int, run: int = 1) -> Path:
    """Where an attempt's files are: its own folder once moved aside, else the node's.

    ``run`` counts the starts of the same visit and attempt: one a stop cut short
    runs again on resume, and the ``run``-th start's files move to ``vV-aA-RUN``.
    """
    name = f"v{visit}-a{attempt}" + (f"-{run}" if run > 1 else "")
    moved = node_dir / name
    return moved if moved.is_dir() else node_dir


def begin_attempt(node_dir: Path, visit: int, attempt: int) -> str | None:
    """Move the previous attempt's files aside; returns their folder's name, if any."""
    moved = _archive(node_dir)
    if (visit, attempt) != (1, 1):  # renamed into place: never written through a FIFO
        marker = json.dumps({"visit": visit, "attempt": attempt})
        atomic_write_text(node_dir / MARKER, marker, fsync=False)
    return moved


def _archive(node_dir: Path) -> str | None:
    entries = [
        e
        for e in os.scandir(node_dir)
        if not _ARCHIVE.match(e.name)
        and e.name not in _NOT_AN_ATTEMPTS
        and not (_CHILD_RUN.match(e.name) and e.is_dir(follow_symlinks=False))
    ]
    # A marker that is not a regular file (a damaged run directory) moves aside too.
    if not [e for e in entries if e.name != MARKER or not e.is_file(follow_symlinks=False)]:
        return None
    name = _name_of_previous(node_dir)
    target = node_dir / name
    n = 1
    # An attempt interrupted and run again keeps both; a link a step left under the
    # name is a name taken, never followed.
    while os.path.lexists(target):
        n += 1
        target = node_dir / f"{name}-{n}"
    make_run_dir(target)
    for entry in entries:
        if entry.name == MARKER and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
        else:
            os.rename(entry.path, target / entry.name)
    return target.name


def _name_of_previous(node_dir: Path) -> str:
    path = node_dir / MARKER
    try:
        data = loads_json(
            read_bounded(path, _MARKER_LIMIT, "attempt marker", follow=False), path, "marker"
        )
        return f"v{int(data['visit'])}-a{int(data['attempt'])}"
    except (InputFileError, ValueError, KeyError, TypeError):
        return "v1-a1"  # first attempts leave no marker
