"""File writes that a crash cannot leave half done, and reads that cannot hang or explode.

Writes: :func:`atomic_write_text` and :func:`atomic_write_json` for state a
resume depends on, :func:`write_text` and :func:`append_text` for stage files.
Everything in a run directory is created with :func:`run_file_mode` and
:func:`run_dir_mode` (private to the user unless ``run_permissions = "umask"``);
a file meant for the user (:data:`USER_FILE`) follows the umask.

Reads: every file attractor reads on a user's behalf (pipeline, config file,
answers file, checkpoint, manifest, results) goes through :func:`read_bounded`:
it must be a regular file (a FIFO or ``/dev/zero`` would block or never end)
no larger than a limit no real file comes near. JSON read back goes through
:func:`loads_json`, which refuses nesting deeper than :data:`MAX_JSON_DEPTH`
before the recursive parser (and the code that walks the result) sees it.
Problems are :class:`~attractor.errors.InputFileError`, which callers turn
into their own errors.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import stat
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from attractor.errors import InputFileError

_tmp_names = itertools.count()

MiB = 1024 * 1024
#: Pipeline, config and answers files: hand-written text, kilobytes in practice.
TEXT_LIMIT = 16 * MiB
#: checkpoint.json, manifest.json, results.jsonl: grow with the run, still far below this.
STATE_LIMIT = 256 * MiB
#: JSON we read back never nests this deep; deeper input would exhaust the
#: parser's recursion (and that of everything that walks the value afterwards).
MAX_JSON_DEPTH = 100

_READ_CHUNK = MiB
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# -- permissions --------------------------------------------------------------------

#: A file only its owner may read and write.
PRIVATE_FILE = 0o600
#: ``mode`` for a file meant for the user (a pipeline ``attractor init`` writes):
#: it follows the umask, and a file it replaces keeps its mode.
USER_FILE = None
#: ``mode`` for a file of a run directory: :func:`run_file_mode`.
RUN_FILE = -1
#: ``run_permissions`` setting -> (file mode, folder mode) of a run directory,
#: before the umask: ``private`` (the default) keeps a run's context, prompts and
#: tool output to the user who ran it; ``umask`` lets the umask decide.
RUN_PERMISSIONS = {"private": (0o600, 0o700), "umask": (0o666, 0o777)}
_run_modes = list(RUN_PERMISSIONS["private"])


def set_run_permissions(name: str) -> None:
    """Choose the modes of what runs write (process-wide; the engine sets it per run)."""
    _run_modes[:] = RUN_PERMISSIONS[name]


def run_file_mode() -> int:
    """The mode a new file of a run directory is created with (then the umask applies)."""
    return _run_modes[0]


def run_dir_mode() -> int:
    """The mode a new folder of a run directory is created with (then the umask applies)."""
    return _run_modes[1]


def make_run_dir(path: str | Path, *, exist_ok: bool = False) -> None:
    """Create the folder ``path`` of a run directory (its parent must exist)."""
    try:
        os.mkdir(path, run_dir_mode())
    except FileExistsError:
        if not exist_ok:
            raise


# -- writes ---------------------------------------------------------------------------


def atomic_write_text(
    path: Path, text: str, *, fsync: bool = True, mode: int | None = RUN_FILE
) -> None:
    """Write ``text`` so that readers see the old file or the new one, never half of it.

    Writes a temporary file in the same directory (named after this process and
    a counter so concurrent writers never share one), optionally fsyncs it, then
    renames it over ``path``. ``mode`` is the new file's mode: by default that
    of a run directory's files (:func:`run_file_mode`); :data:`USER_FILE`
    (None) keeps the mode of the file replaced, or follows the umask for a new
    one, as an editor's save would. Plain os calls: this runs between every two
    nodes, and tempfile/TextIOWrapper cost more than the write itself.
    """
    tmp = f"{path.parent}/.{path.name}.{os.getpid()}-{next(_tmp_names)}.tmp"
    created = run_file_mode() if mode == RUN_FILE else (mode or 0o666)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, created)
        try:
            if mode is None:
                _keep_mode(fd, path)
            _write_all(fd, text.encode("utf-8"))
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _keep_mode(fd: int, path: Path) -> None:
    """Give the temporary file ``fd`` the permission bits of the file it replaces."""
    try:
        old = os.stat(path).st_mode
    except OSError:
        return  # a new file: os.open applied the umask to 0666
    if stat.S_ISREG(old):
        os.fchmod(fd, stat.S_IMODE(old))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def atomic_write_json(
    path: Path, data: Any, *, fsync: bool = True, mode: int | None = RUN_FILE
) -> None:
    """Atomically write ``data`` as indented JSON (non-JSON values become strings)."""
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n", fsync=fsync, mode=mode)


def _json_encoder(separators: tuple[str, str]) -> Callable[[Any], str]:
    """A reusable ``json.dumps`` for records the engine writes per node or event.

    Values that are not JSON become strings; there is no check for circular
    references (records are built fresh and never refer to themselves).
    ``JSONEncoder.encode`` builds a new C encoder on every call, which costs about
    what encoding an event does; this one is built once.
    """
    item, key = separators
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(separators=separators, default=str).encode
    encode_str = json.encoder.encode_basestring_ascii
    chunks = make(None, str, encode_str, None, key, item, False, False, True)

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return str(encode_str(value))
        return "".join(chunks(value, 0))

    return encode


#: ``json.dumps(value, default=str)``, built once: events, results rows, status.json values.
dumps = _json_encoder((", ", ": "))
#: The same without spaces (``separators=(",", ":")``): journal records, checkpoints.
dumps_compact = _json_encoder((",", ":"))


def json_lines(data: dict[str, Any]) -> str:
    """``data`` as JSON with one top-level field per line, each value on its line.

    As readable as ``indent=2`` for a record of a few fields (status.json), at
    half its cost: ``json.dumps`` with ``indent`` takes the pure-Python encoder.
    """
    encode = dumps
    fields = ",\n".join(f"  {encode(str(k))}: {encode(v)}" for k, v in data.items())
    return f"{{\n{fields}\n}}\n" if fields else "{}\n"


class AppendFile:
    """A file lines are appended to, each with one ``write`` call (no Python buffer).

    What a line says is in the file when :meth:`write` returns (not fsynced), so a
    reader tailing it, or a run killed right after, sees every line whole.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, run_file_mode()
        )

    def write(self, text: str) -> None:
        """Append ``text`` (ignored once closed: a late event after the run ended)."""
        if self._fd is not None:
            _write_all(self._fd, text.encode("utf-8"))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def write_text(path: str | Path, text: str) -> None:
    """Plain write for stage files whose loss a resume tolerates (re-created on rerun).

    One open, one write, one close (Path.write_text builds a TextIOWrapper). The
    engine passes a ``str`` per node: building a Path costs about what the write does.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, run_file_mode())
    try:
        _write_all(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def append_text(path: str | Path, text: str) -> None:
    """Append ``text`` to a run directory's log file (created with :func:`run_file_mode`)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, run_file_mode())
    try:
        _write_all(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


# -- bounded reads ------------------------------------------------------------------


def read_bounded(path: str | Path, limit: int, what: str) -> str:
    """The UTF-8 text of regular file ``path``, at most ``limit`` bytes.

    Newlines are translated as :meth:`Path.read_text` does. ``what`` names the
    file in messages (``"pipeline file"``). The file is opened with O_NONBLOCK,
    so a FIFO does not block the open, and refused unless fstat says it is a
    regular file; the size is checked before and while reading (``/proc`` files
    report 0).

    Raises:
        InputFileError: with ``kind`` os, not_regular, too_large or not_utf8.
    """
    shown = str(path)
    data = _read_regular(shown, limit, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputFileError(
            shown, "cannot read: not UTF-8 text", f"save the {what} as UTF-8", kind="not_utf8"
        ) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def require_regular(path: str | Path, what: str, *, verb: str = "") -> None:
    """Refuse ``path`` if it exists and is not a regular file (a missing file is fine).

    ``verb`` starts the reason (``"cannot read: "``) when the caller is about to read.

    Raises:
        InputFileError: ``kind`` not_regular, or os when stat fails other than ENOENT.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _os_error(str(path), exc) from None
    if not stat.S_ISREG(mode):
        raise _not_regular(str(path), mode, what, verb)


def _read_regular(path: str, limit: int, what: str) -> bytes:
    require_regular(path, what, verb="cannot read: ")  # refuse a device before opening it
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise _os_error(path, exc) from None
    try:
        info = os.fstat(fd)  # what was opened, in case the path changed since the stat
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode, what, "cannot read: ")
        if info.st_size > limit:
            raise _too_large(path, limit, what, info.st_size)
        return _read_at_most(fd, path, limit, what)
    except OSError as exc:
        raise _os_error(path, exc) from None
    finally:
        os.close(fd)


def _read_at_most(fd: int, path: str, limit: int, what: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := os.read(fd, min(_READ_CHUNK, limit + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _too_large(path, limit, what, None)
    return b"".join(chunks)


def _os_error(path: str, exc: OSError) -> InputFileError:
    reason = exc.strerror or type(exc).__name__
    hint = "check the path" if exc.errno == errno.ENOENT else "check the path and its permissions"
    return InputFileError(path, f"cannot read: {reason}", hint, kind="os", errno=exc.errno)


def _not_regular(path: str, mode: int, what: str, verb: str) -> InputFileError:
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    return InputFileError(
        path,
        f"{verb}{kind}, not a regular file",
        f"pass a regular {what}",
        kind="not_regular",
    )


def _too_large(path: str, limit: int, what: str, size: int | None) -> InputFileError:
    found = "larger than" if size is None else f"{format_size(size)}, over"
    return InputFileError(
        path,
        f"cannot read: {found} the {format_size(limit)} limit for {_a(what)}",
        "check that this is the right file",
        kind="too_large",
        limit=limit,
    )


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in ("a", "e", "i", "o", "u") else f"a {noun}"


def format_size(size: int) -> str:
    """``16 MiB``, ``16.5 MiB`` or ``512 bytes``."""
    if size < MiB:
        return f"{size} bytes"
    mib = size / MiB
    return f"{mib:.0f} MiB" if size % MiB == 0 else f"{mib:.1f} MiB"


# -- JSON nesting -------------------------------------------------------------------

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """The deepest bracket nesting of JSON ``text``, ignoring brackets inside strings.

    No recursion and no Python loop per character: the regex engine drops the
    strings and everything but brackets, then a running sum finds the maximum.
    """
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def loads_json(text: str, path: str | Path, what: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)``, refusing nesting deeper than ``max_depth`` levels.

    Raises:
        InputFileError: ``kind`` too_deep, naming ``path`` and the limit.
        ValueError: ``text`` is not JSON (the caller words that itself).
    """
    # Counting brackets first is cheap; only text that could be too deep is scanned.
    if text.count("[") + text.count("{") > max_depth and json_depth(text) > max_depth:
        raise _too_deep(str(path), what, max_depth)
    try:
        return json.loads(text)
    except RecursionError:  # not reachable after the scan; kept as a last guard
        raise _too_deep(str(path), what, max_depth) from None


def _too_deep(path: str, what: str, limit: int) -> InputFileError:
    return InputFileError(
        path,
        f"{what} nests JSON deeper than the {limit}-level limit",
        "the file is damaged",
        kind="too_deep",
        limit=limit,
    )
