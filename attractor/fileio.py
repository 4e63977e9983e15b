"""File writes that a crash cannot leave half done, and reads that cannot hang or explode.

Writes: :func:`atomic_write_text` and :func:`atomic_write_json` for state a
resume depends on, :func:`write_text` and :func:`append_text` for stage files,
:class:`AppendFile` for JSON lines. Inside a run, each of them takes the run's
secrets out of what it writes first (:mod:`attractor.redact`). Everything in a
run directory is created with :func:`run_file_mode` and :func:`run_dir_mode`
(private to the user unless ``run_permissions = "umask"``); a file meant for
the user (:data:`USER_FILE`) follows the umask.

Reads: every file attractor reads on a user's behalf (pipeline, config file,
answers file, checkpoint, manifest, results) goes through :func:`read_bounded`:
it must be a regular file (a FIFO or ``/dev/zero`` would block or never end)
no larger than a limit no real file comes near. JSON read back goes through
:func:`loads_json`, which refuses nesting deeper than :data:`MAX_JSON_DEPTH`
before the recursive parser (and the code that walks the result) sees it.
Problems are :class:`~attractor.errors.InputFileError`, which callers turn
into their own errors.

Files of a run directory that grow (``journal.jsonl``, ``events.jsonl``,
``results.jsonl``) are streamed by :func:`read_lines`, one line in memory at a
time, with a cap per line and in total; stage files are read in part by
:func:`read_head` and :func:`read_tail`. All of them go through
:func:`open_regular`: O_NONBLOCK, then fstat, so nothing but a regular file is
ever read.

Paths a pipeline names (``human.show``, a child pipeline, a ``workdir``) go
through :func:`confine_path` and :func:`read_confined_text`: resolved, symbolic
links followed, and refused outside the places a run may read
(:class:`~attractor.errors.PipelinePathError`).
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from attractor import redact
from attractor.errors import InputFileError, PipelinePathError

_tmp_names = itertools.count()

MiB = 1024 * 1024
#: Pipeline, config and answers files: hand-written text, kilobytes in practice.
TEXT_LIMIT = 16 * MiB
#: checkpoint.json, manifest.json, results.jsonl: grow with the run, still far below this.
STATE_LIMIT = 256 * MiB
#: One line of a JSONL run file (an event, a journal record, a results row).
LINE_LIMIT = 64 * MiB
#: events.jsonl as a whole: read as a stream, one line at a time.
EVENTS_LIMIT = 4096 * MiB
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
    text = redact.text(text)
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

    def __init__(self, path: Path, *, redacted: bool = False) -> None:
        self.path = path
        #: Whether what is written was redacted already (events, by the event bus).
        self._redacted = redacted
        self._fd: int | None = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, run_file_mode()
        )

    def write(self, text: str) -> None:
        """Append ``text`` (ignored once closed: a late event after the run ended)."""
        if self._fd is not None:
            clean = text if self._redacted else redact.text(text)
            _write_all(self._fd, clean.encode("utf-8"))

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
        _write_all(fd, redact.text(text).encode("utf-8"))
    finally:
        os.close(fd)


def append_text(path: str | Path, text: str) -> None:
    """Append ``text`` to a run directory's log file (created with :func:`run_file_mode`)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, run_file_mode())
    try:
        _write_all(fd, redact.text(text).encode("utf-8"))
    finally:
        os.close(fd)


# -- bounded reads ------------------------------------------------------------------


def read_bounded(path: str | Path, limit: int, what: str) -> str:
    """The UTF-8 text of regular file ``path``, at most ``limit`` bytes.

    Newlines are translated as :meth:`Path.read_text` does, and a byte-order mark
    at its start (some Windows editors write one) is dropped. ``what`` names the
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
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputFileError(
            shown, "cannot read: not UTF-8 text", f"save the {what} as UTF-8", kind="not_utf8"
        ) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def require_regular(path: str | Path, what: str, *, verb: str = "") -> None:
    """Refuse ``path`` if it exists and is not a regular file (a missing file is fine,
    a symbolic link to a missing file is not).

    ``verb`` starts the reason (``"cannot read: "``) when the caller is about to read.

    Raises:
        InputFileError: ``kind`` not_regular, or os when stat fails other than ENOENT.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):  # writing through it would create a file elsewhere
            raise InputFileError(
                str(path),
                f"{verb}a symbolic link to nothing ({os.readlink(path)}), not a regular file",
                f"pass a regular {what}",
                kind="not_regular",
            ) from None
        return
    except OSError as exc:
        raise _os_error(str(path), exc) from None
    if not stat.S_ISREG(mode):
        raise _not_regular(str(path), mode, what, verb)


def _read_regular(path: str, limit: int, what: str) -> bytes:
    fd, size = open_regular(path, what)
    try:
        if size > limit:
            raise _too_large(path, limit, what, size)
        return _read_at_most(fd, path, limit, what)
    except OSError as exc:
        raise _os_error(path, exc) from None
    finally:
        os.close(fd)


def open_regular(path: str | Path, what: str, *, follow: bool = True) -> tuple[int, int]:
    """A read-only descriptor of regular file ``path`` and its size; the caller closes it.

    Opened with O_NONBLOCK (a FIFO cannot block the open) after a stat that refuses
    a device, and checked again with fstat on what was opened. ``follow=False``
    refuses a symbolic link as the last component.

    Raises:
        InputFileError: ``kind`` os or not_regular.
    """
    shown = str(path)
    require_regular(shown, what, verb="cannot read: ")  # refuse a device before opening it
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    if not follow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(shown, flags)
    except OSError as exc:
        raise _os_error(shown, exc) from None
    try:
        info = os.fstat(fd)  # what was opened, in case the path changed since the stat
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(shown, info.st_mode, what, "cannot read: ")
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def read_head(path: str | Path, limit: int, what: str) -> bytes:
    """At most the first ``limit`` bytes of regular file ``path`` (a longer file is cut).

    Raises:
        InputFileError: ``kind`` os or not_regular.
    """
    fd, _ = open_regular(path, what)
    try:
        return _read_upto(fd, 0, limit)
    except OSError as exc:
        raise _os_error(str(path), exc) from None
    finally:
        os.close(fd)


def read_tail(path: str | Path, limit: int, what: str) -> tuple[bytes, bool]:
    """The last ``limit`` bytes of regular file ``path``, and whether more came before.

    Raises:
        InputFileError: ``kind`` os or not_regular.
    """
    fd, size = open_regular(path, what)
    try:
        start = max(0, size - limit)
        return _read_upto(fd, start, limit), start > 0
    except OSError as exc:
        raise _os_error(str(path), exc) from None
    finally:
        os.close(fd)


def _read_upto(fd: int, offset: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < limit and (chunk := os.pread(fd, min(_READ_CHUNK, limit - total), offset)):
        chunks.append(chunk)
        total += len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def read_lines(
    path: str | Path,
    what: str,
    *,
    offset: int = 0,
    line_limit: int = LINE_LIMIT,
    total_limit: int = STATE_LIMIT,
) -> Iterator[tuple[int, bytes]]:
    """Stream the whole lines of regular file ``path`` from byte ``offset``.

    Yields ``(end, line)``: the byte offset just after the line's newline, and
    the line without it. A last line without its newline (a write cut short, or
    one still being written) is not yielded. Only one chunk and one line are in
    memory at a time. An ``offset`` past the end yields nothing.

    Raises:
        InputFileError: ``kind`` os or not_regular; too_large when a line is
            longer than ``line_limit`` or more than ``total_limit`` bytes follow
            ``offset``.
    """
    shown = str(path)
    fd, size = open_regular(shown, what)
    try:
        yield from _lines(fd, shown, what, min(offset, size), line_limit, total_limit)
    except OSError as exc:
        raise _os_error(shown, exc) from None
    finally:
        os.close(fd)


def _lines(
    fd: int, path: str, what: str, offset: int, line_limit: int, total_limit: int
) -> Iterator[tuple[int, bytes]]:
    read_at = end = offset
    parts: list[bytes] = []  # the start of a line that the chunks read so far did not end
    waiting = 0
    while chunk := os.pread(fd, _READ_CHUNK, read_at):
        read_at += len(chunk)
        if read_at - offset > total_limit:
            raise _too_large(path, total_limit, what, None)
        begin = 0
        while (newline := chunk.find(b"\n", begin)) != -1:
            line = chunk[begin:newline]
            if parts:
                line = b"".join([*parts, line])
                parts, waiting = [], 0
            if len(line) > line_limit:
                raise _long_line(path, line_limit, what)
            end += len(line) + 1
            yield end, line
            begin = newline + 1
        if begin < len(chunk):
            parts.append(chunk[begin:])
            waiting += len(chunk) - begin
            if waiting > line_limit:
                raise _long_line(path, line_limit, what)


def _long_line(path: str, limit: int, what: str) -> InputFileError:
    return InputFileError(
        path,
        f"cannot read: a line longer than the {format_size(limit)} limit for {_a(what)}",
        "the file is damaged",
        kind="too_large",
        limit=limit,
    )


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


# -- paths a pipeline names -----------------------------------------------------------


def confine_path(
    path: str | Path,
    roots: Sequence[Path],
    *,
    attribute: str,
    node: str | None,
) -> Path:
    """``path`` with every symbolic link resolved, refused unless it lies inside a root.

    ``roots`` are the places a run may read (the pipeline's folder, the
    workdir); they are resolved too, so a link to them counts as them. A path
    that does not exist yet is resolved as far as it exists.

    Raises:
        PipelinePathError: ``kind`` outside, naming ``attribute`` and ``node``.
    """
    real = Path(os.path.realpath(path))
    allowed = list(dict.fromkeys(Path(os.path.realpath(root)) for root in roots))
    if not any(real == root or real.is_relative_to(root) for root in allowed):
        places = " or ".join(str(root) for root in allowed) or "no folder"
        raise PipelinePathError(
            str(path),
            f"resolves to {real}, outside the places a run may read ({places})",
            "name a path inside the working directory or the pipeline's folder "
            "(symbolic links are followed), or run with a --workdir that holds it",
            kind="outside",
            attribute=attribute,
            node=node,
        )
    return real


def read_confined_text(
    path: str | Path,
    roots: Sequence[Path],
    limit: int,
    *,
    attribute: str,
    node: str | None,
    cut: bool = False,
) -> str:
    """The text of the file a pipeline names, read only if it is safe to read.

    The file must resolve inside ``roots`` (see :func:`confine_path`) and be a
    regular file (opened with O_NONBLOCK and checked with fstat, so a FIFO or a
    device never blocks); it is at most ``limit`` bytes, or with ``cut`` only
    its first ``limit`` bytes are read. Invalid UTF-8 is replaced. This blocks
    on the disk: call it from a worker thread (``anyio.to_thread``), never on
    the event loop.

    Raises:
        PipelinePathError: ``kind`` outside, os, not_regular or too_large.
    """
    real = confine_path(path, roots, attribute=attribute, node=node)
    what = f"{attribute} file"
    try:
        fd, size = open_regular(real, what, follow=False)
    except InputFileError as exc:
        raise _for_attribute(exc, str(path), attribute, node) from None
    try:
        if size > limit and not cut:
            raise _for_attribute(
                _too_large(str(path), limit, what, size), str(path), attribute, node
            )
        data = _read_upto(fd, 0, limit)
    except OSError as exc:
        raise _for_attribute(_os_error(str(path), exc), str(path), attribute, node) from None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def _for_attribute(
    exc: InputFileError, path: str, attribute: str, node: str | None
) -> PipelinePathError:
    hint = {
        "not_regular": f"point {attribute} at a regular file",
        "too_large": f"point {attribute} at a smaller file",
    }.get(exc.kind, exc.hint)
    return PipelinePathError(
        path,
        exc.reason,
        hint,
        kind=exc.kind,
        attribute=attribute,
        node=node,
        limit=exc.limit,
        errno=exc.errno,
    )
