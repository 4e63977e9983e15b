"""A stage file served whole (a step's stdout.txt, stderr.txt, response...), confined to the run.

The page shows the last few thousand bytes of each file and live output lines;
this gives the whole file behind its "whole file" link. Only the stage files
a node writes are served, from the node's folder or one of its attempts'
(the caller checks which), never through a symbolic link out of the run
directory, and what is served passes through the server's redactor (a
command still running has not had its output scrubbed yet).
"""

from __future__ import annotations

from pathlib import Path

from attractor.errors import InputFileError
from attractor.fileio.reads import read_tail
from attractor.server.body import Problem
from attractor.server.confine import inside

#: The files of a stage folder that may be asked for.
SERVED = frozenset(
    {
        "stdout.txt",
        "stderr.txt",
        "response.md",
        "prompt.md",
        "transcript.jsonl",
        "reflections.md",
        "status.json",
        "status.engine.json",
        "answer.json",
    }
)
#: The most of one file served: a larger one is served from this far before its end.
MAX_SERVED = 32 * 1024 * 1024


def stage_file(run_dir: Path, folder: Path, name: str) -> bytes:
    """The file ``name`` of stage folder ``folder`` (its last :data:`MAX_SERVED` bytes).

    Raises:
        Problem: 404 for a name not served or a file that is not there, 403 for
            one that leads outside the run directory.
    """
    if name not in SERVED:
        raise Problem(404, f"no stage file {name!r}; one of {', '.join(sorted(SERVED))}")
    path = folder / name
    if not inside(run_dir, path):
        raise Problem(403, f"{name} leads outside the run directory; it is not served")
    try:
        data, cut = read_tail(path, MAX_SERVED, "stage file")
    except InputFileError:
        raise Problem(404, f"{folder.name} has no {name} (yet)") from None
    if cut:
        note = f"[... the first part of {name} is left out: it is over {MAX_SERVED} bytes]\n"
        data = note.encode() + data
    return data
