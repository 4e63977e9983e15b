"""The run directory: where one run keeps its manifest, checkpoint, events and stage files.

Layout::

    RUN_DIR/
        manifest.json     name, goal, source hash, status, timings, token usage
        checkpoint.json   the whole state, written now and then and at the stop (checkpoint.py)
        journal.jsonl     one line per step since: what changed (journal.py)
        pipeline.dot      a copy of the pipeline source, so resume needs nothing else
        events.jsonl      every event as one JSON line with a timestamp
        results.jsonl     one summary row per finished node (for the summary on resume)
        .lock             flock()ed by the process driving the run (holds its pid)
        processes.jsonl   process groups started by tool steps, for resume to stop survivors
        NODE_ID/          status.json, prompt.md, response.md, stdout.txt, stderr.txt
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attractor.dot.graph import Graph

from attractor.errors import (
    CheckpointError,
    DiskFullError,
    InputFileError,
    RunError,
    SettingError,
    UsageError,
)
from attractor.events import Event
from attractor.fileio.digest import sha256_hex
from attractor.fileio.jsonio import dumps, loads_json
from attractor.fileio.reads import (
    STATE_LIMIT,
    TEXT_LIMIT,
    read_bounded,
    read_lines,
    require_regular,
)
from attractor.fileio.writes import (
    AppendFile,
    atomic_write_json,
    atomic_write_text,
    make_run_dir,
    run_dir_mode,
    run_file_mode,
    set_run_permissions,
    write_stage_file,
)
from attractor.proc.files import set_file_mode
from attractor.store import attempts
from attractor.store.checkpoint import Checkpoint, CheckpointEncoder
from attractor.store.journal import JOURNAL, Journal, damaged_run_file
from attractor.workspace.names import CHECKOUT_INDEX, OWN_FOLDER, SETUP_LOG, SNAPSHOT_GIT_DIR

MANIFEST = "manifest.json"
CHECKPOINT = "checkpoint.json"
PIPELINE_COPY = "pipeline.dot"
EVENTS = "events.jsonl"
RESULTS = "results.jsonl"
LOCK = ".lock"
#: Every process group the run started, with its leader's start time (see proc/ledger.py).
PROCESSES = "processes.jsonl"
#: What a run directory holds before its first checkpoint: a run stopped then
#: (killed, disk full) never started, and its directory may be reused. The
#: workspace is made before the first checkpoint too (a snapshot's git directory,
#: the copy of the user's index a worktree's start commit is made with, the set-up
#: command's log: attractor/workspace/create.py).
SETUP_FILES = frozenset(
    (LOCK, PIPELINE_COPY, MANIFEST, EVENTS, RESULTS, PROCESSES, "journal.jsonl")
    + (SNAPSHOT_GIT_DIR, CHECKOUT_INDEX, SETUP_LOG)
)
#: Of those, the folders (a snapshot workspace's git directory, made before the
#: first checkpoint: a stop while it is made leaves it half made).
SETUP_FOLDERS = frozenset((SNAPSHOT_GIT_DIR,))
#: Where a run goes when no --logs-dir is given; placeholders as in new_run_dir.
DEFAULT_LOGS_DIR = ".attractor/runs/{timestamp}-{graph}"


def source_hash(text: str) -> str:
    return sha256_hex(text.encode("utf-8"))


def utc_stamp(when: float | None = None) -> str:
    """A UTC timestamp usable in a directory name: ``20250101T120000Z``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when))


#: A name made only of what a folder name keeps as it is (``\\w`` is what
#: ``str.isalnum`` accepts, and ``_``).
_SAFE_NAME = re.compile(r"[\w.-]+")


def _safe_name(name: str) -> str:
    """``name`` as a folder name: a new string, never ``name`` itself.

    Python 3.11's pathlib interns each part of a path it builds: the graph's own
    id would stay in the interpreter's table for as long as the graph lives,
    an entry a node of a long run; a copy leaves it when its path is dropped.
    """
    if _SAFE_NAME.fullmatch(name):  # most node ids: a copy, not a loop a character
        cleaned = name.encode().decode()
    else:
        cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return cleaned.strip("._") or "pipeline"


def use_permissions(name: str) -> None:
    """Create what runs write with the modes the ``run_permissions`` setting ``name`` says."""
    set_run_permissions(name)
    set_file_mode(run_file_mode())


def new_run_dir(logs_dir: str | None, graph_name: str, *, source: str = "--logs-dir") -> Path:
    """Create the run directory ``logs_dir`` names (default :data:`DEFAULT_LOGS_DIR`).

    ``{timestamp}`` (UTC, ``20261122T040646Z``) and ``{graph}`` (the graph's
    name) expand, so one setting can give every run a fresh directory; two runs
    started in the same second then get ``-2``, ``-3``... suffixes. A path
    without placeholders is taken as it is: it may exist, but only as an empty
    directory. One that already holds a run is refused (its checkpoint would be
    overwritten), and so is any other non-empty directory (the user's files
    would be overwritten or appended to). ``source`` names where ``logs_dir``
    came from (``--logs-dir``, ``ATTRACTOR_LOGS_DIR``...) for the messages.

    Raises:
        UsageError: the directory cannot be created or must not be used.
    """
    template = logs_dir or DEFAULT_LOGS_DIR
    path = Path(
        template.replace("{timestamp}", utc_stamp()).replace("{graph}", _safe_name(graph_name))
    )
    try:
        if "{timestamp}" in template or "{graph}" in template:
            path.parent.mkdir(parents=True, exist_ok=True)
            _ignored_by_git(path.parent)
            return _unique_dir(path.parent, path.name)
        return _claim_dir(path, template, source)
    except OSError as exc:
        raise _cannot_create(path, template if logs_dir else None, source, exc) from None


def _ignored_by_git(folder: Path) -> None:
    """attractor's own folder (``.attractor``) holding ``folder`` ignores itself in git,
    as tools' caches do: a ``.gitignore`` of ``*`` in it, so a run leaves no untracked
    ``.attractor/`` in ``git status``. One the user wrote is kept."""
    for own in (folder, *folder.parents):
        if own.name == OWN_FOLDER:
            with contextlib.suppress(OSError):  # theirs, made meanwhile, or not ours to make
                fd = os.open(own / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                try:
                    os.write(fd, b"# made by attractor: its runs are not part of the project\n*\n")
                finally:
                    os.close(fd)
            return


def check_logs_dir(logs_dir: str | None, source: str = "--logs-dir") -> None:
    """Refuse, before anything else happens, a run directory :func:`new_run_dir` would refuse.

    A command checks what it was given first: ``run p.dot --logs-dir OLD_RUN``
    says that OLD_RUN already holds a run before it looks at the pipeline's
    gates or builds a model backend. Nothing is created here.

    Raises:
        UsageError: ``logs_dir`` (without placeholders) holds a run or other files,
            or is not a directory.
    """
    if not logs_dir or "{timestamp}" in logs_dir or "{graph}" in logs_dir:
        return
    path = Path(logs_dir)
    try:
        if path.is_dir() or path.exists() or path.is_symlink():
            _refuse_used(path, logs_dir, source, take=False)
    except OSError:
        return  # unreadable: new_run_dir reports it when it tries to create the run


def _refuse_used(path: Path, template: str, source: str, *, take: bool = True) -> None:
    """Refuse an existing ``path`` unless it is an empty directory or a run that never started.

    With ``take``, the leftovers of a run that never started are removed.
    """
    if path.is_dir():
        if never_started(path):
            if take:
                _take_over(path)
            return
        if (path / CHECKPOINT).exists() or (path / MANIFEST).exists():
            raise UsageError(
                f"{path} already holds a run; resume it with: attractor resume {path}, "
                "or pass another --logs-dir"
            )
        entries = sorted(os.listdir(path))
        if entries:
            raise SettingError(
                source,
                template,
                f"{path} is not empty and holds no run ({_some_entries(path, entries)}); "
                "name a new or empty directory, or add {timestamp} to get a fresh one",
            )
        return
    raise SettingError(
        source, template, f"{path} exists and is not a directory; name a directory for the run"
    )


def never_started(path: Path) -> bool:
    """Whether ``path`` holds only what a run writes before its first checkpoint.

    Such a run was stopped (killed, or out of disk space) while its directory
    was being created: there is nothing to resume, and ``run --logs-dir`` may
    use the directory again. An empty directory is not counted.
    """
    try:
        entries = set(os.listdir(path))
    except OSError:
        return False
    if CHECKPOINT in entries or not all(map(_setup_file, entries)):
        return False
    # The lock comes first, the manifest next (start_setup): a pipeline.dot
    # without them is the user's own file in a folder that is no run directory.
    ours = {name for name in entries if not name.endswith(".tmp")}
    return MANIFEST in entries or ours == {LOCK}


def _setup_file(name: str) -> bool:
    # Atomic writes leave ".NAME.PID-N.tmp" behind when they are cut short.
    return name in SETUP_FILES or (name.startswith(".") and name.endswith(".tmp"))


def _take_over(path: Path) -> None:
    """Empty the directory of a run that never started, unless a process still holds it."""
    holder = RunDir(path)
    holder.lock()  # raises when a starting run holds it
    holder.unlock()
    discard_unstarted(path, remove_dir=False)


def discard_unstarted(path: Path, *, remove_dir: bool = True) -> None:
    """Remove what a run wrote before its first checkpoint (never a resumable run).

    Called when a new run stops before it could be resumed, so that what it
    leaves is nothing rather than a directory both ``resume`` and
    ``run --logs-dir`` would refuse. With ``remove_dir`` the emptied directory goes too.
    """
    if not never_started(path):
        return
    for name in os.listdir(path):
        if name in SETUP_FOLDERS and (path / name).is_dir() and not (path / name).is_symlink():
            shutil.rmtree(path / name, ignore_errors=True)
            continue
        with contextlib.suppress(OSError):
            os.unlink(path / name)
    if remove_dir:
        with contextlib.suppress(OSError):
            os.rmdir(path)


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) is full."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def write_error(path: Path, exc: OSError, then: str) -> RunError:
    """The one-line error for a run directory that could not be written.

    ``then`` says how to go on once the cause is gone (``resume it: attractor resume X``).
    """
    reason = exc.strerror or type(exc).__name__
    if disk_full(exc):
        return DiskFullError(
            f"cannot write the run directory {path}: {reason}; free some space, then {then}"
        )
    target = exc.filename2 or exc.filename  # the file may be the cause (a folder in its place)
    where = f" ({target})" if target else ""
    return RunError(
        f"cannot write the run directory {path}: {reason}{where}; {then} once it is writable"
    )


def _claim_dir(path: Path, template: str, source: str) -> Path:
    """``path`` created, or found empty; refused if it holds a run or anything else."""
    if path.is_dir() or path.exists() or path.is_symlink():
        _refuse_used(path, template, source)
        os.chmod(path, run_dir_mode() & ~_umask())  # it is the run directory now
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    make_run_dir(path)
    return path


def _umask() -> int:
    """The process umask, read without changing it (Linux ``/proc``), else 022."""
    with contextlib.suppress(OSError, ValueError):
        for line in read_bounded("/proc/self/status", TEXT_LIMIT, "status").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _some_entries(path: Path, entries: list[str], shown: int = 3) -> str:
    names = [f"{n}/" if os.path.isdir(path / n) else n for n in entries[:shown]]
    more = f" and {len(entries) - shown} more" if len(entries) > shown else ""
    return "it has " + ", ".join(names) + more


def _cannot_create(
    path: Path, value: str | None, source: str, exc: OSError
) -> UsageError | RunError:
    if disk_full(exc):
        return write_error(path, exc, "run the pipeline again")
    reason = exc.strerror or type(exc).__name__
    blocker = next((p for p in path.parents if os.path.lexists(p)), None)
    if blocker is not None and not os.path.isdir(blocker):
        reason = f"{blocker} is not a directory"
    what = f"cannot create the run directory {path}: {reason}"
    if value is None:  # the built-in default
        return UsageError(f"{what}; pass --logs-dir with a directory you can write to")
    return SettingError(source, value, f"{what}; choose a directory you can write to")


def sibling_run_dir(run_dir: Path, suffix: str) -> Path:
    """Create a new directory next to ``run_dir`` (used by loop_restart)."""
    return _unique_dir(run_dir.parent, f"{run_dir.name}-{suffix}")


def _unique_dir(base: Path, stem: str) -> Path:
    candidate = base / stem
    n = 1
    while True:
        try:
            make_run_dir(candidate)
            return candidate
        except FileExistsError:
            n += 1
            candidate = base / f"{stem}-{n}"


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the run directory ``path`` (:meth:`RunDir.read_manifest`)."""
    return RunDir(path).read_manifest()


class RunDir:
    """Paths and writers of one run directory: the run store there is (store/base.py)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: The node whose folder this process made sure exists last, and the folder:
        #: the engine asks for it again as the node ends. Only the last: a long run
        #: holds nothing a node, and a node entered again costs one mkdir that fails.
        self._opened: tuple[str, Path] | None = None
        self._lock_fd: int | None = None
        self._encoder: CheckpointEncoder | None = None

    def lock(self) -> None:
        """Take the directory's exclusive lock for the whole run (or resume).

        Two processes driving one run directory would interleave checkpoints
        and run nodes twice. The lock is an flock() on ``.lock``, so the kernel
        releases it when the process ends, even after SIGKILL; the descriptor is
        close-on-exec so tool processes left behind do not hold it.

        Raises:
            UsageError: another process holds the lock (its pid is named).
        """
        if self._lock_fd is not None:
            return
        fd = self._open_lock()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip() or "unknown"
            os.close(fd)
            raise UsageError(
                f"{self.path} is in use by another attractor process (pid {holder}); "
                "wait for it or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._lock_fd = fd

    def _open_lock(self) -> int:
        path = self.path / LOCK
        try:
            require_regular(path, "lock file")  # a FIFO, a device or a dangling link
            # O_NOFOLLOW: a link swapped in since the check is refused, not followed.
            flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(path, flags, run_file_mode())
        except InputFileError as exc:
            raise damaged_run_file(exc) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise CheckpointError(
                    f"{path}: a symbolic link, not a regular file; "
                    "the run directory is damaged, start a new run"
                ) from None
            raise UsageError(
                f"{self.path}: cannot open the run directory's lock file: {exc.strerror}; "
                "check that the directory exists and that you can write to it"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise CheckpointError(
                f"{path}: not a regular file; the run directory is damaged, start a new run"
            )
        return fd

    def unlock(self) -> None:
        """Release the lock taken by :meth:`lock` (closing the descriptor does it)."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def checkpoint_path(self) -> Path:
        return self.path / CHECKPOINT

    @property
    def pipeline_path(self) -> Path:
        return self.path / PIPELINE_COPY

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS

    def has_checkpoint(self) -> bool:
        return self.checkpoint_path.is_file()

    def load_checkpoint(self) -> Checkpoint:
        """checkpoint.json brought forward by journal.jsonl (:meth:`Checkpoint.load`),
        once the run's files are known to be regular files.

        A FIFO in place of processes.jsonl, results.jsonl, events.jsonl or
        journal.jsonl would block a resume for good when read or opened for
        appending; a dangling symbolic link would have them created elsewhere.

        Raises:
            CheckpointError: a run file is damaged, or the checkpoint is missing or damaged.
        """
        for name in (PROCESSES, RESULTS, EVENTS, JOURNAL):
            try:
                require_regular(self.path / name, "run file")
            except InputFileError as exc:
                raise damaged_run_file(exc) from None
        return Checkpoint.load(self.checkpoint_path)

    def child_steps(self, node_ids: Iterable[str]) -> int:
        """The rows of the child runs' ``results.jsonl`` in these nodes' folders
        (grandchildren's included); only those folders are searched."""
        taken = 0
        for node_id in node_ids:
            for results in sorted(self.stage_path(node_id).glob(f"child*/**/{RESULTS}")):
                taken += _rows(results)
        return taken

    def begin_attempt(self, node_id: str, visit: int, attempt: int) -> None:
        """The files of the node's previous attempt move aside (store/attempts.py)."""
        attempts.begin_attempt(self.stage_dir(node_id), visit, attempt)

    def write_status(self, node_id: str, record: str, *, beside_node_s: bool) -> None:
        """``status.json``, or ``status.engine.json`` beside the one the node wrote."""
        # Here, not at the top: a reader of run directories needs no outcome parsing.
        from attractor.store.status_file import ENGINE_RECORD, STATUS

        name = ENGINE_RECORD if beside_node_s else STATUS
        # Made again if it is gone: a refused entry never made it, a command may remove it.
        write_stage_file(self.stage_path(node_id), name, record)

    def read_results(self, count: int) -> list[dict[str, Any]]:
        """The first ``count`` summary rows of results.jsonl (later ones are from
        work the checkpoint does not cover and will run again).

        A missing file, or a row cut short by a crash, ends the rows early. The
        file is streamed: only the rows asked for are read.

        Raises:
            CheckpointError: the file is not a regular file, a row is over
                :data:`~attractor.fileio.reads.LINE_LIMIT` or nests too deeply.
        """
        rows: list[dict[str, Any]] = []
        if count <= 0:
            return rows
        try:
            for _, line in read_lines(self.results_path, "results file"):
                row = loads_json(line.decode("utf-8"), self.results_path, "results row")
                if not isinstance(row, dict):
                    break
                rows.append(row)
                if len(rows) == count:
                    break
        except InputFileError as exc:
            if exc.kind in ("os", "not_utf8"):
                return rows
            raise damaged_run_file(exc) from None
        except ValueError:  # not JSON, or not UTF-8: the rows end here
            pass
        return rows

    def stage_dir(self, node_id: str) -> Path:
        """The folder of node ``node_id``, created on first use."""
        return self.open_stage_dir(node_id)[0]

    def stage_path(self, node_id: str) -> Path:
        """Where the folder of node ``node_id`` is (or would be); nothing is created."""
        return self.path / _safe_name(node_id)

    def open_stage_dir(self, node_id: str) -> tuple[Path, bool]:
        """The folder of node ``node_id``, and whether this call created it (so it is empty)."""
        if self._opened is not None and self._opened[0] == node_id:
            return self._opened[1], False
        path = self.path / _safe_name(node_id)
        try:
            make_run_dir(path)
            created = True
        except FileExistsError:
            created = False
        except FileNotFoundError:  # the run directory itself went away: say where
            path.mkdir(mode=run_dir_mode(), parents=True, exist_ok=True)
            created = True
        self._opened = (node_id, path)
        return path, created

    def copy_source(self, text: str) -> None:
        atomic_write_text(self.pipeline_path, text)

    def copy_prompt_files(self, graph: Graph) -> None:
        """Copy the prompt files ``graph`` read beside the pipeline copy, at the same
        relative paths, so a resume from the copy reads the same prompts.

        A path that leaves its folder, or whose first part is a node id (a stage
        directory), is not copied: a resume then reports it as a ``prompt_file``
        error instead of mixing it into a stage's files.
        """
        from attractor.dot.prompts import snapshot_path

        for prompt in graph.prompt_files.values():
            where = snapshot_path(prompt.path)
            if where is None or graph.has_node(Path(where).parts[0]):
                continue
            target = self.path / where
            target.parent.mkdir(mode=run_dir_mode(), parents=True, exist_ok=True)
            atomic_write_text(target, prompt.text)

    def read_manifest(self) -> dict[str, Any]:
        """manifest.json, or ``{}`` when it is missing or not a JSON object.

        Raises:
            CheckpointError: it is not a regular file, is over
                :data:`~attractor.fileio.reads.STATE_LIMIT` or nests too deeply.
        """
        try:
            text = read_bounded(self.manifest_path, STATE_LIMIT, "manifest")
            data = loads_json(text, self.manifest_path, "manifest")
        except InputFileError as exc:
            if exc.kind in ("os", "not_utf8"):
                return {}
            raise damaged_run_file(exc) from None
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def write_manifest(self, data: dict[str, Any]) -> None:
        atomic_write_json(self.manifest_path, data)

    # The run store's writers (store/base.py: RunStore).

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Write checkpoint.json; each write encodes only what changed since the last."""
        if self._encoder is None:
            self._encoder = CheckpointEncoder()
        checkpoint.save(self.checkpoint_path, self._encoder)

    def open_journal(self, seq: int) -> Journal:
        return Journal(self.path / JOURNAL, seq)

    def open_events(self) -> EventLog:
        return EventLog(self.events_path)

    def open_results(self, rows: list[str] | None = None) -> AppendFile:
        """results.jsonl; ``rows`` (a resume: the rows the checkpoint covers) replace it first."""
        if rows is not None:  # atomically: a full disk must not leave the rows cut away
            atomic_write_text(self.results_path, "".join(rows))
        return AppendFile(self.results_path)


def _rows(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return 0


class EventLog:
    """Observer appending each event to ``events.jsonl``: one write per event, not fsynced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # An observer of the event bus, which redacted each event once already.
        self._file = AppendFile(path, redacted=True)

    def __call__(self, event: Event) -> None:
        self._file.write(dumps(event.to_json()) + "\n")

    def close(self) -> None:
        self._file.close()
