"""How a run stands: the one status type of runs and their checkpoints.

A :class:`RunStatus` is a ``str``: it is written to ``manifest.json``,
``checkpoint.json`` and the event log, and sent in JSON, as its plain value
(``"timed_out"``), and compares equal to it. What a file holds is read as a
string first (a damaged or older file may hold anything); :func:`run_status`
turns it into a member when it is one.

The read side (``runview``) lists a run with one word more than the run wrote
when its files say less than that: :class:`SeenStatus` (``stopped``, ``damaged``,
``unknown``); :data:`ListedStatus` is either.
"""

from __future__ import annotations

import signal
from enum import StrEnum


class RunStatus(StrEnum):
    """Where a run is: going, ended, stopped (resumable) or gone on elsewhere."""

    #: Going (or stopped without a word: a crash, a kill -9).
    RUNNING = "running"
    SUCCESS = "success"
    FAIL = "fail"
    #: ``--timeout`` ran out.
    TIMED_OUT = "timed_out"
    #: SIGINT (Ctrl-C), or a front end cancelled it.
    INTERRUPTED = "interrupted"
    #: SIGTERM.
    TERMINATED = "terminated"
    #: SIGHUP: the terminal or SSH session went away.
    HANGUP = "hangup"
    #: A ``loop_restart`` edge: the run went on in a new run directory.
    RESTARTED = "restarted"


#: The statuses a run can be resumed from: the node in progress runs again.
RESUMABLE: frozenset[RunStatus] = frozenset(
    {
        RunStatus.RUNNING,
        RunStatus.TIMED_OUT,
        RunStatus.INTERRUPTED,
        RunStatus.TERMINATED,
        RunStatus.HANGUP,
    }
)

#: The statuses of a run stopped from outside (a deadline, a signal, a request).
STOPPED: frozenset[RunStatus] = RESUMABLE - {RunStatus.RUNNING}

#: The statuses of a run that ended by itself: there is nothing left to resume.
ENDED: frozenset[RunStatus] = frozenset({RunStatus.SUCCESS, RunStatus.FAIL})

#: The signals that stop a run (or a server's runs), and the status each leaves.
STOP_SIGNALS: dict[signal.Signals, RunStatus] = {
    signal.SIGINT: RunStatus.INTERRUPTED,
    signal.SIGTERM: RunStatus.TERMINATED,
    signal.SIGHUP: RunStatus.HANGUP,  # the terminal or SSH session went away
}


class SeenStatus(StrEnum):
    """What a reader of run directories says of a run that its files do not."""

    #: The manifest says running, but no process drives the run any more.
    STOPPED = "stopped"
    #: Its manifest or summary rows cannot be read.
    DAMAGED = "damaged"
    #: Its manifest names no status this version knows.
    UNKNOWN = "unknown"


#: A run's status as the read side lists it: the run's own, else the reader's word.
ListedStatus = RunStatus | SeenStatus


def listed_status(text: object) -> ListedStatus:
    """The run status ``text`` names, else :attr:`SeenStatus.UNKNOWN`."""
    return run_status(text) or SeenStatus.UNKNOWN


def run_status(text: object) -> RunStatus | None:
    """The member ``text`` names (as a file holds it), None for anything else."""
    try:
        return RunStatus(str(text))
    except ValueError:
        return None
