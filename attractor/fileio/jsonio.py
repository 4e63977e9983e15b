"""JSON as runs write it and read it back.

Records the engine writes per node or event are encoded by :data:`dumps` and
:data:`dumps_compact`, built once; :func:`json_lines` lays out a small record
one field per line. JSON read back goes through :func:`loads_json`, which
refuses nesting deeper than :data:`MAX_JSON_DEPTH` before the recursive parser
(and the code that walks the result) sees it.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attractor.errors import InputFileError

#: JSON we read back never nests this deep; deeper input would exhaust the
#: parser's recursion (and that of everything that walks the value afterwards).
MAX_JSON_DEPTH = 100


# -- encoding ---------------------------------------------------------------------


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
    heads = _HEADS
    fields = ",\n".join(
        (heads.get(k) or _head(k)) + (_encode_str(v) if type(v) is str else dumps(v))
        for k, v in data.items()
    )
    return f"{{\n{fields}\n}}\n" if fields else "{}\n"


#: The start of a json_lines field (``  "outcome": ``) by key: records repeat their keys.
_HEADS: dict[Any, str] = {}
_HEADS_LIMIT = 1024
_encode_str = json.encoder.encode_basestring_ascii


def _head(key: Any) -> str:
    head = f"  {dumps(str(key))}: "
    if len(_HEADS) < _HEADS_LIMIT and type(key) is str:
        _HEADS[key] = head
    return head


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
