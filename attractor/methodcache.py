"""Compiled dataclass methods, kept between processes as Python keeps bytecode.

``dataclasses`` writes the source of each method it adds (``__init__``, and
for a frozen class the guards ``__setattr__`` and ``__delattr__``) and compiles
it with ``exec`` while the declaring module is imported. A run imports over a
hundred such classes; compiling their 340 small functions took 21-25 ms of
every command's start-up on the reference machine, more than anything else
at import.

:func:`install` puts a stand-in for ``exec`` in the ``dataclasses`` module
only: given a text it has compiled before, it runs the code object kept for
that exact text. The key is the whole text, so a changed class compiles again
and the result is the same function either way. The code objects are saved
when the process exits, if it compiled anything new, in the ``__pycache__``
folder beside this file (or under ``sys.pycache_prefix``), named after the
interpreter's cache tag and stamped with its bytecode magic number. As with
bytecode, ``python -B`` or ``PYTHONDONTWRITEBYTECODE`` stops the writing, not
the reading; a file that cannot be written or read is simply not used.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import importlib.util
import marshal
import os
import sys
from types import CodeType
from typing import Any

__all__ = ["compiled", "install", "run"]

#: Texts saved at most (about 1.5 KB each, all read at every start); past it only
#: the texts this process used are saved.
LIMIT = 1000
_NAME = "dataclass-methods"

_kept: dict[str, CodeType] = {}
_used: set[str] = set()
_compiled = 0
#: Whether the file held entries of no use (not code): written again at exit.
_stale = False


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **options: Any) -> None:  # noqa: A002
    """``exec`` for ``dataclasses``: a text compiled before runs its kept code."""
    global _compiled
    if type(source) is str and not options:
        code = _kept.get(source)
        if code is None:
            # As ``exec`` compiles a text: no future flags (``dataclasses`` has none),
            # not this module's ``annotations`` future.
            code = compile(source, "<string>", "exec", dont_inherit=True)
            _kept[source] = code
            _compiled += 1
        _used.add(source)
        source = code
    builtins.exec(source, globals, locals, **options)


def run(text: str, globals: dict[str, Any], locals: dict[str, Any]) -> None:  # noqa: A002
    """Run method ``text`` as ``dataclasses`` does, through the same kept code objects
    (for :mod:`attractor.valueclass`, which writes the same texts)."""
    _exec(text, globals, locals)


def compiled() -> int:
    """How many method texts this process compiled (found in no cache)."""
    return _compiled


def cache_path() -> str | None:
    """Where the code objects are kept, or None for an interpreter that keeps no bytecode."""
    try:
        pyc = importlib.util.cache_from_source(__file__)
    except NotImplementedError:  # no cache tag: this interpreter keeps no bytecode
        return None
    return os.path.join(os.path.dirname(pyc), f"{_NAME}.{sys.implementation.cache_tag}.marshal")


def _load(path: str) -> dict[str, CodeType]:
    global _stale
    try:
        with open(path, "rb") as file:
            stamp, table = marshal.loads(file.read())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if stamp != importlib.util.MAGIC_NUMBER or type(table) is not dict:
        return {}
    usable = {text: code for text, code in table.items() if type(code) is CodeType}
    _stale = len(usable) < len(table)
    return usable


def _save() -> None:
    """At exit: write the kept code objects when this process compiled any (or the
    file held entries of no use)."""
    path = cache_path()
    if not (_compiled or _stale) or path is None or sys.dont_write_bytecode:
        return
    table = _kept
    if len(table) > LIMIT:
        table = {text: _kept[text] for text in _used}
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as file:
            marshal.dump((importlib.util.MAGIC_NUMBER, table), file)
        os.replace(temporary, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def install() -> None:
    """Route ``dataclasses``' compiling through the cache (once per process)."""
    if getattr(dataclasses, "exec", None) is _exec:
        return
    path = cache_path()
    if path is not None:
        _kept.update(_load(path))
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(_save)
