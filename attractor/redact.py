"""Secrets taken out of everything a run writes or shows: one :class:`Redactor` per run.

Two kinds of text are replaced:

- the *value* of a secret variable: an environment variable whose name matches
  :data:`SECRET_NAME_PATTERNS` (``*API_KEY*``, ``*SECRET*``, ``*TOKEN*``, ...)
  or one the user declares (setting ``secrets``), becomes ``[redacted:NAME]``;
- a string *shaped like* a well-known credential (OpenAI ``sk-...``, Anthropic
  ``sk-ant-...``, Google ``AIza...``, GitHub ``ghp_...``/``github_pat_...``, AWS
  ``AKIA...``, Slack ``xox?-...``, the token of an ``Authorization:`` header, a
  ``-----BEGIN ... PRIVATE KEY-----`` block) becomes ``[redacted:KIND]``
  (``openai-key``, ``aws-access-key``, ...).

Values are matched literally, as written and as JSON writes them (escaped), so a
run file's JSON stays valid. A value is *not* treated as a secret when it is
shorter than :data:`MIN_SECRET_LENGTH` characters (``true``, ``1``, ``dev``
would otherwise be cut out of every line of output), made only of digits (a
count or a port; replacing a number would break the JSON it sits in), or the
path of an existing file or folder (``GOOGLE_APPLICATION_CREDENTIALS`` names
where a key is, not the key).

Each value is one substring search and each credential shape one compiled
pattern that starts with a literal, in a ``str`` and a ``bytes`` form: about
ten fast scans of the text, see ``benchmarks/bench_redact.py``.

The engine sets :data:`CURRENT` for the duration of a run; the writers of run
files call :func:`text` (a no-op outside a run), so a file a user owns (a
pipeline saved by the server, ``attractor init``) is never rewritten.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import fnmatch
import functools
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, AnyStr, Generic

from attractor.ownfiles import create_new

#: Variable names whose values are secrets (matched case-insensitively, shell-glob style).
SECRET_NAME_PATTERNS = (
    "*API_KEY*",
    "*APIKEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*ACCESS_KEY*",
    "*PRIVATE_KEY*",
)
#: attractor's own settings whose values name variables (they match the patterns).
NAMES_NOT_SECRETS = frozenset({"ATTRACTOR_SECRETS", "ATTRACTOR_API_KEY_ENV"})
#: Shorter values are not redacted: they would mangle ordinary output.
MIN_SECRET_LENGTH = 8
#: The prefix of every replacement; tools that write files refuse text holding it.
MARKER = "[redacted:"

_BLOCK_SEP = r"(?:\r?\n|\\r\\n|\\n)"
#: A line of a key block, perhaps numbered as read_file shows it (`` 12 | ``).
_PEM_LINE = (
    r"(?:[ \t]*[0-9]{1,9} \| )?"
    r"(?:[A-Za-z-]{1,30}: [^\r\n\\]{0,200}|[A-Za-z0-9+/=]{1,200})(?=[\r\n\\]|$)"
)
_SCHEMES = r"(?:[Bb]earer|[Bb]asic|[Tt]oken|BEARER|BASIC|TOKEN)"
_BEARER = r"""["']?\s*[:=]\s*["']?""" + _SCHEMES + r"\s+[A-Za-z0-9._~+/=-]{8,}"
#: (kind, pattern) of credential shapes. Each pattern starts with a literal, so it
#: is found by a fast substring search; at one position the first kind listed wins.
KEY_PATTERNS: tuple[tuple[str, str], ...] = (
    (  # up to its END line; without one (a cut-off block), its lines of base64
        "private-key",
        rf"-----BEGIN[A-Z0-9 ]{{0,40}}PRIVATE KEY-----(?:[\s\S]{{0,16384}}?"
        rf"-----END[A-Z0-9 ]{{0,40}}PRIVATE KEY-----|(?:{_BLOCK_SEP}{_PEM_LINE})*)",
    ),
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}"),
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("github-token", r"github_pat_[A-Za-z0-9_]{22,}"),
    ("aws-access-key", r"AKIA[0-9A-Z]{16}(?![0-9A-Za-z])"),
    ("aws-access-key", r"ASIA[0-9A-Z]{16}(?![0-9A-Za-z])"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("bearer-token", "Authorization" + _BEARER),
    ("bearer-token", "authorization" + _BEARER),
    ("bearer-token", "AUTHORIZATION" + _BEARER),
)
_KEEP_HEAD = re.compile(r"^.*\s")  # what a bearer-token match keeps: up to the last space
#: Kinds that must start a word (``task-`` holds ``sk-`` but is no key).
_WORD_START = frozenset(kind for kind, _ in KEY_PATTERNS if kind != "private-key")


def names_secret(name: str, declared: Iterable[str] = ()) -> bool:
    """Whether variable ``name`` holds a secret: a default pattern or a declared name/pattern."""
    upper = name.upper()
    if upper in NAMES_NOT_SECRETS:
        return False
    return _secret_names(tuple(declared)).match(upper) is not None


@functools.cache
def _secret_names(declared: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every name pattern (a run checks each variable of its environment)."""
    found = glob_regex((*SECRET_NAME_PATTERNS, *declared))
    assert found is not None  # SECRET_NAME_PATTERNS is never empty
    return found


def glob_regex(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regex that matches an upper-cased name any of the globs ``patterns`` matches
    (upper-cased too, blanks skipped; None: no pattern)."""
    parts = [fnmatch.translate(p.strip().upper()) for p in patterns if p.strip()]
    return re.compile("|".join(parts)) if parts else None


def worth_redacting(value: str) -> bool:
    """Whether ``value`` is redacted at all (see the module docstring)."""
    text = value.strip()
    if len(text) < MIN_SECRET_LENGTH or text.isdigit():
        return False
    return not (text.startswith(("/", "~", ".")) and os.path.exists(os.path.expanduser(text)))


class Redactor:
    """Replaces secret values and credential-shaped strings; built once per run.

    Each value is found by a substring search and each credential shape by its
    own compiled pattern, run only when the literal it starts with is in the
    text (a substring search too). One alternation of them all would need a
    named group per kind to tell them apart, and ``re`` scans such a pattern
    dozens of times slower (``benchmarks/bench_redact.py``). Overlapping finds
    become one, named after the earliest (at one position: the first value or
    kind listed), so no part of either is left.
    """

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        """``secrets`` maps each secret value to the name shown in its place."""
        forms: dict[str, str] = {}
        for value, name in (secrets or {}).items():
            for form in _written_forms(value):
                forms.setdefault(form, name)
        self.names = tuple(sorted(set(forms.values())))
        literals = sorted(forms, key=len, reverse=True)  # a longer value before its prefix
        self._str = _Finder(
            [(v, f"[redacted:{forms[v]}]") for v in literals],
            [(kind, _literal_prefix(p), p) for kind, p in KEY_PATTERNS],
            "",
        )
        self._bytes = _Finder(
            [(v.encode(), f"[redacted:{forms[v]}]".encode()) for v in literals],
            [(k, _literal_prefix(p).encode(), p.encode()) for k, p in KEY_PATTERNS],
            b"",
        )

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], declared: Iterable[str] = ()) -> Redactor:
        """The redactor for the secret variables of ``environ`` (plus ``declared`` names)."""
        declared = tuple(declared)
        secrets: dict[str, str] = {}
        for name in sorted(environ):
            value = environ[name]
            if names_secret(name, declared) and worth_redacting(value):
                secrets.setdefault(value, name)
                secrets.setdefault(value.strip(), name)
        return cls(secrets)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced (the same object when nothing matched)."""
        if len(text) < MIN_SECRET_LENGTH:  # most event fields: names, statuses
            return text
        return self._str.redact(text)

    def data(self, data: bytes) -> bytes:
        """``data`` (bytes, any encoding) with every secret replaced."""
        return self._bytes.redact(data)

    def value(self, value: Any) -> Any:
        """``value`` with the strings inside it (dict values, list items) redacted.

        Returns the same object when nothing inside it changed. Any other object
        (a set, a path) whose text holds a secret becomes its redacted text, as
        the JSON writers would turn it into text anyway.
        """
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            new: dict[Any, Any] | None = None  # made at the first change only
            for key, item in value.items():
                clean = self.value(item)
                if clean is not item:
                    if new is None:
                        new = dict(value)
                    new[key] = clean
            return value if new is None else new
        if isinstance(value, list | tuple):
            items = [self.value(v) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return tuple(items) if isinstance(value, tuple) else items
        if value is None or isinstance(value, int | float):
            return value
        shown = str(value)
        clean = self.text(shown)
        return value if clean is shown else clean

    def scrub_file(self, path: Path) -> bool:
        """Rewrite ``path`` without its secrets (atomically); True when it held any.

        Read in line-aligned chunks (a private key block is kept whole), so a
        file of any size costs one pass and little memory; a file without
        secrets is only read. A missing file, or anything but a regular file (a
        FIFO a command left in its place is not waited on), is nothing to do.
        """
        try:
            if os.stat(path).st_size == 0:  # most commands' stderr: nothing to open
                return False
            # Not through a link a step left in its place (to a file outside).
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (FileNotFoundError, IsADirectoryError):
            return False
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return False
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return False
        with os.fdopen(fd, "rb") as source:
            out = None
            tmp = path.with_name(f".{path.name}.{os.getpid()}.redact")
            done = 0
            try:
                for chunk in _chunks(source):
                    clean = self.data(chunk)
                    if out is None and clean is not chunk:
                        out = os.fdopen(create_new(tmp, 0o600), "wb")  # private until renamed
                        _copy_head(fd, done, out)
                    if out is not None:
                        out.write(clean)
                    done += len(chunk)
                if out is None:
                    return False
                os.fchmod(out.fileno(), os.fstat(fd).st_mode & 0o777)
                out.close()
                os.replace(tmp, path)
                return True
            finally:
                if out is not None and not out.closed:
                    out.close()
                    tmp.unlink(missing_ok=True)


@functools.cache
def _compiled(source: AnyStr) -> re.Pattern[AnyStr]:
    return re.compile(source)


class _Finder(Generic[AnyStr]):
    """The searches of one :class:`Redactor` for ``str`` or for ``bytes``."""

    def __init__(
        self,
        values: list[tuple[AnyStr, AnyStr]],
        patterns: list[tuple[str, AnyStr, AnyStr]],
        empty: AnyStr,
    ) -> None:
        self.values: list[tuple[AnyStr, AnyStr]] = values
        #: (kind, the literal its pattern starts with, the pattern's source): each is
        #: compiled the first time its literal is found (most runs never need one, and
        #: compiling the two dozen cost a short run's start-up a tenth of its time).
        self.patterns: list[tuple[str, AnyStr, AnyStr]] = patterns
        self.empty: AnyStr = empty
        # Every find starts with one of these: text holding none is returned at once.
        literals = [literal for _, literal, _ in patterns] + [value for value, _ in values]
        self.anchors: tuple[AnyStr, ...] = tuple(
            dict.fromkeys(
                a for a in literals if not any(b != a and a.startswith(b) for b in literals)
            )
        )

    def redact(self, text: AnyStr) -> AnyStr:
        for anchor in self.anchors:
            if anchor in text:
                break
        else:
            return text
        spans = self._spans(text)
        if not spans:
            return text
        spans.sort(key=lambda span: (span[0], span[3]))
        parts: list[AnyStr] = []
        end = 0
        for start, stop, replacement, _ in spans:
            if start < end:  # overlaps an earlier find: that one's marker covers both
                end = max(end, stop)
                continue
            parts += (text[end:start], replacement)
            end = stop
        parts.append(text[end:])
        joined: AnyStr = self.empty.join(parts)
        return joined

    def _spans(self, text: AnyStr) -> list[tuple[int, int, AnyStr, int]]:
        spans: list[tuple[int, int, AnyStr, int]] = []
        for rank, (value, replacement) in enumerate(self.values):
            start = text.find(value)
            while start >= 0:
                spans.append((start, start + len(value), replacement, rank))
                start = text.find(value, start + len(value))
        rank = len(self.values)
        for kind, literal, pattern in self.patterns:
            rank += 1
            if literal not in text:  # a substring search: far cheaper than a regex scan
                continue
            for match in _compiled(pattern).finditer(text):
                start = match.start()
                if kind in _WORD_START and start and _word_char(text[start - 1 : start]):
                    continue
                spans.append((start, match.end(), self._replacement(kind, match.group()), rank))
        return spans

    def _replacement(self, kind: str, matched: AnyStr) -> AnyStr:
        head = ""
        if kind == "bearer-token":
            found = _KEEP_HEAD.match(matched.decode() if isinstance(matched, bytes) else matched)
            head = found.group() if found else ""
        text = f"{head}[redacted:{kind}]"
        return text.encode() if isinstance(self.empty, bytes) else text


def _literal_prefix(pattern: str) -> str:
    """The plain text every match of ``pattern`` starts with."""
    return re.split(r"[][.^$*+?{}\\|()]", pattern, maxsplit=1)[0]


def _word_char(char: str | bytes) -> bool:
    return char.isalnum() or char in ("_", b"_")


_CHUNK = 1024 * 1024
#: The longest private key block kept whole across a chunk boundary.
_BLOCK_LIMIT = 64 * 1024


def _copy_head(fd: int, size: int, out: Any) -> None:
    """Copy the first ``size`` bytes of file ``fd`` (already known clean) to ``out``."""
    offset = 0
    while offset < size:
        piece = os.pread(fd, min(size - offset, _CHUNK), offset)
        if not piece:
            return
        out.write(piece)
        offset += len(piece)


def _written_forms(value: str) -> list[str]:
    """``value`` as it appears in text and in the JSON of run files."""
    forms = [value]
    for escaped in (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
        if escaped not in forms:
            forms.append(escaped)
    return forms


def _chunks(source: Any) -> Iterable[bytes]:
    """Pieces of ``source`` that end at a line end, none cutting a private key block.

    A line longer than a piece is cut after a space or tab, else anywhere.
    """
    rest = b""
    while True:
        data = source.read(_CHUNK)
        if not data:
            if rest:
                yield rest
            return
        data = rest + data
        cut = data.rfind(b"\n") + 1
        begin = data.rfind(b"-----BEGIN", 0, cut)
        if begin >= 0 and data.find(b"-----END", begin) < 0 and len(data) - begin < _BLOCK_LIMIT:
            cut = begin
        if cut <= 0 and len(data) > _BLOCK_LIMIT:
            # A line longer than that: cut after its last blank (keys hold none).
            cut = max(data.rfind(b" "), data.rfind(b"\t")) + 1 or len(data)
        if cut > 0:
            yield data[:cut]
        rest = data[cut:]


#: The redactor of the run in progress (None outside a run: nothing is redacted).
CURRENT: contextvars.ContextVar[Redactor | None] = contextvars.ContextVar(
    "attractor_redactor", default=None
)


def current() -> Redactor | None:
    return CURRENT.get()


def text(value: str) -> str:
    """``value`` redacted by the run's redactor (unchanged outside a run)."""
    redactor = CURRENT.get()
    return value if redactor is None else redactor.text(value)


def value(data: Any) -> Any:
    """:meth:`Redactor.value` with the run's redactor (unchanged outside a run)."""
    redactor = CURRENT.get()
    return data if redactor is None else redactor.value(data)


def scrub_files(paths: Iterable[Path]) -> None:
    """Rewrite files a command wrote itself without the run's secrets (none outside a run).

    A command's output goes to its files directly (no copy through the engine),
    so they are scrubbed when it ends; while it runs, its raw output is only in
    the stage folder (the terminal and the server redact what they read of it).
    """
    redactor = CURRENT.get()
    if redactor is not None:
        for path in paths:
            # Best effort: this runs as a step ends, also when it is cancelled, and
            # must not hide why it ended (a file it cannot rewrite stays as it is).
            with contextlib.suppress(OSError):
                redactor.scrub_file(path)
