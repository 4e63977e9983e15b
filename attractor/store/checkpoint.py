"""Checkpoints: the state a run needs to continue after it stopped or crashed.

A checkpoint is both the "after" of the node that finished and the "before" of
the next one: it lists the completed nodes and names the node about to run
(``next_node``). A run that stops while a node is running is resumed by running
that node again from its start; completed nodes never run again.

The engine records each step in ``journal.jsonl`` and rewrites the whole
``checkpoint.json`` only now and then and when the run stops (see
:mod:`attractor.store.journal`). :meth:`Checkpoint.load` applies the journal
records written after the checkpoint, so it always returns the current state;
a run directory without a journal (written by an older attractor) loads as it is.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from attractor.errors import CheckpointError, InputFileError
from attractor.fileio.jsonio import dumps_compact, loads_json
from attractor.fileio.reads import STATE_LIMIT, read_bounded
from attractor.fileio.writes import atomic_write_text
from attractor.handlers.outcome import StageStatus
from attractor.run_status import RunStatus, run_status
from attractor.store.journal import JOURNAL, read_records
from attractor.valueclass import mutable

VERSION = 1

#: The status a checkpoint records while the run is going.
RUNNING = RunStatus.RUNNING


@mutable
class Checkpoint:
    """A JSON-serialisable snapshot of one run's progress."""

    #: How the run stood when the checkpoint was written (a file holding any other
    #: word is refused as damaged).
    status: RunStatus = RUNNING
    #: The node running when the checkpoint was written, else the last completed one.
    current_node: str | None = None
    #: The node to run when the run continues (None once the run is finished).
    next_node: str | None = None
    completed_nodes: list[str] = field(default_factory=list)
    #: Last status of each completed node (goal gates need it on resume).
    node_outcomes: dict[str, str] = field(default_factory=dict)
    node_retries: dict[str, int] = field(default_factory=dict)
    node_visits: dict[str, int] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    run_turns_used: int = 0
    #: Tokens and cost the run spent so far, every attempt counted (``Usage.to_json``);
    #: None in a checkpoint written before attractor recorded it.
    run_usage: dict[str, Any] | None = None
    #: How many summary rows of results.jsonl belong to this checkpoint.
    node_results_count: int = 0
    failure_reason: str = ""
    timestamp: float = field(default_factory=time.time)
    version: int = VERSION
    #: The last journal record this checkpoint contains, and the byte offset of the next one.
    journal_seq: int = 0
    journal_offset: int = 0

    def to_json(self) -> dict[str, Any]:
        # A shallow dict: asdict() deep-copies, which costs more than the write.
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def save(self, path: Path, encoder: CheckpointEncoder | None = None) -> None:
        """Write atomically (temp file, fsync, rename) as compact JSON.

        A run passes its :class:`CheckpointEncoder` so that each write only
        encodes what changed since the previous one.
        """
        self.timestamp = time.time()
        text = dumps_compact(self.to_json()) if encoder is None else encoder.encode(self)
        atomic_write_text(path, text + "\n")

    @classmethod
    def load(cls, path: Path) -> Checkpoint:
        """The current state of the run whose checkpoint is ``path``.

        Reads the checkpoint, then applies the records of ``journal.jsonl``
        beside it that came later. The file must be a regular file of at most
        :data:`~attractor.fileio.reads.STATE_LIMIT` bytes whose JSON nests no deeper
        than :data:`~attractor.fileio.jsonio.MAX_JSON_DEPTH`.

        Raises:
            CheckpointError: what went wrong and what to do.
        """
        checkpoint = cls.load_file(path)
        journal = path.with_name(JOURNAL)
        replayed = False
        tail = read_records(journal, checkpoint.journal_offset, checkpoint.journal_seq)
        for number, record in tail:
            apply_record(checkpoint, record, journal, number)
            replayed = True
        if replayed:  # the records are checked as the checkpoint's fields are
            checkpoint = cls.from_json(checkpoint.to_json(), journal)
        return checkpoint

    @classmethod
    def load_file(cls, path: Path) -> Checkpoint:
        """``checkpoint.json`` alone, without the journal records after it."""
        try:
            text = read_bounded(path, STATE_LIMIT, "checkpoint")
            data = loads_json(text, path, "checkpoint")
        except InputFileError as exc:
            raise CheckpointError(_load_problem(path, exc)) from None
        except ValueError as exc:
            raise CheckpointError(f"{path}: checkpoint is not valid JSON ({exc})") from None
        return cls.from_json(data, path)

    @classmethod
    def from_json(cls, data: Any, path: Path) -> Checkpoint:
        if not isinstance(data, dict):
            raise CheckpointError(f"{path}: checkpoint must be a JSON object")
        if data.get("version") != VERSION:
            raise CheckpointError(
                f"{path}: checkpoint version {data.get('version')!r} is not supported "
                f"(expected {VERSION}); start a new run"
            )
        values = {k: v for k, v in data.items() if k in _FIELD_CHECKS}
        for name, value in values.items():
            check, expected = _FIELD_CHECKS[name]
            if not check(value):
                raise CheckpointError(
                    f"{path}: checkpoint field {name!r} must be {expected}, "
                    f"found {dumps_compact(value)[:60]}; the file is damaged, start a new run"
                )
        if "status" in values:
            values["status"] = RunStatus(values["status"])
        return cls(**values)


#: Journal record key -> the checkpoint field it updates entry by entry.
_MAP_FIELDS = {"status": "node_outcomes", "visits": "node_visits", "retries": "node_retries"}


def apply_record(checkpoint: Checkpoint, record: dict[str, Any], path: Path, number: int) -> None:
    """Bring ``checkpoint`` forward by one journal record (see :mod:`attractor.store.journal`)."""
    try:
        for node, _visit in record.get("done", ()):
            checkpoint.completed_nodes.append(node)
        for key, name in _MAP_FIELDS.items():
            getattr(checkpoint, name).update(record.get(key, {}))
        checkpoint.context.update(record.get("context", {}))
        checkpoint.logs.extend(record.get("logs", ()))
    except (TypeError, ValueError, AttributeError):
        raise CheckpointError(
            f"{path}: line {number} after the checkpoint is not a journal record; "
            "the run directory is damaged, start a new run"
        ) from None
    checkpoint.run_turns_used = record.get("turns", checkpoint.run_turns_used)
    checkpoint.node_results_count = record.get("results", checkpoint.node_results_count)
    checkpoint.run_usage = record.get("usage", checkpoint.run_usage)
    checkpoint.next_node = record.get("next")
    checkpoint.current_node = record.get("current")
    checkpoint.journal_seq = record["seq"]


def _load_problem(path: Path, exc: InputFileError) -> str:
    if exc.errno == errno.ENOENT:
        return f"{path}: no checkpoint found; is this a run directory of attractor run?"
    if exc.kind == "os":
        return str(exc)
    if exc.kind == "not_utf8":
        return f"{path}: checkpoint is not UTF-8 JSON text; the file is damaged, start a new run"
    return f"{path}: {exc.reason}; the run directory is damaged, start a new run"


def _is_int(value: Any) -> bool:
    return type(value) is int  # bool is an int subclass, and not a count


def _is_str_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_counter_map(value: Any) -> bool:
    return isinstance(value, dict) and all(_is_int(v) and v >= 0 for v in value.values())


def _is_status_map(value: Any) -> bool:
    return isinstance(value, dict) and all(v in _STATUSES for v in value.values())


_STATUSES = frozenset(s.value for s in StageStatus)

#: What each field must hold; a damaged file is reported naming the field.
_FIELD_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "status": (
        lambda v: isinstance(v, str) and run_status(v) is not None,
        "a run status (" + ", ".join(RunStatus) + ")",
    ),
    "current_node": (_is_str_or_none, "a node id or null"),
    "next_node": (_is_str_or_none, "a node id or null"),
    "completed_nodes": (_is_str_list, "a list of node ids"),
    "node_outcomes": (
        _is_status_map,
        "an object of node id to status (" + ", ".join(sorted(_STATUSES)) + ")",
    ),
    "node_retries": (_is_counter_map, "an object of node id to a count"),
    "node_visits": (_is_counter_map, "an object of node id to a count"),
    "context": (lambda v: isinstance(v, dict), "an object"),
    "logs": (_is_str_list, "a list of strings"),
    "run_turns_used": (lambda v: _is_int(v) and v >= 0, "a count"),
    "node_results_count": (lambda v: _is_int(v) and v >= 0, "a count"),
    "run_usage": (lambda v: v is None or isinstance(v, dict), "an object of token counts"),
    "failure_reason": (lambda v: isinstance(v, str), "a string"),
    "timestamp": (lambda v: type(v) in (int, float), "a number"),
    "version": (_is_int, "an integer"),
    "journal_seq": (lambda v: _is_int(v) and v >= 0, "a count"),
    "journal_offset": (lambda v: _is_int(v) and v >= 0, "a count"),
}


class _ListCache:
    """The JSON of a list that only grows (completed nodes): new items are encoded once."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.body = ""

    def encode(self, values: list[Any]) -> str:
        n = len(self.items)
        if len(values) < n or values[:n] != self.items:
            self.items, self.body, n = [], "", 0
        if len(values) > n:
            added = values[n:]
            self.items += added
            tail = dumps_compact(added)[1:-1]
            self.body = f"{self.body},{tail}" if self.body else tail
        return f"[{self.body}]"


class _MapCache:
    """The JSON of a dict of scalars (statuses, counters) keyed by node id.

    Keeps a copy of the dict as last encoded and its JSON body. When the only
    change since is entries added at the end (the nodes of ``candidates``, those
    touched since the previous write), only they are encoded and appended; any
    other change (a node entered again) encodes the whole dict once more, in C.
    A comparison with the copy checks that nothing else changed: the candidates
    only make it fast, never wrong. The result always parses to the dict, in the
    dict's order for statuses. No JSON is kept a node: a long run's snapshots are
    spaced out (engine/progress.py), its memory is not.
    """

    def __init__(self, ordered: bool) -> None:
        #: The dict as last encoded, and its JSON without the braces.
        self.prev: dict[Any, Any] = {}
        self.body = ""
        self.ordered = ordered

    def encode(self, values: Mapping[Any, Any], candidates: list[str]) -> str:
        prev = self.prev
        appended: list[str] = []
        for key in candidates:
            if key not in values:
                continue
            value = values[key]
            if key in prev:
                if type(prev[key]) is type(value) and prev[key] == value:
                    continue
                return self._rebuild(values)  # a value changed in place
            appended.append(key)
            prev[key] = value
        if len(prev) != len(values) or prev != values or not self._same_order(values):
            return self._rebuild(values)
        if appended:
            new = ",".join(f"{dumps_compact(key)}:{dumps_compact(values[key])}" for key in appended)
            self.body = f"{self.body},{new}" if self.body else new
        return f"{{{self.body}}}"

    def _same_order(self, values: Mapping[Any, Any]) -> bool:
        # The order of statuses matters (goal gates are checked in it on resume);
        # counters are compared as mappings.
        return not self.ordered or list(values) == list(self.prev)

    def _rebuild(self, values: Mapping[Any, Any]) -> str:
        if not all(type(key) is str for key in values):  # json.dumps converts other keys
            self.prev, self.body = {}, ""
            return dumps_compact(dict(values))
        self.prev = dict(values)
        self.body = dumps_compact(self.prev)[1:-1]
        return f"{{{self.body}}}"


class CheckpointEncoder:
    """Encodes successive checkpoints of one run, re-encoding only what changed.

    The output parses to what ``json.dumps(checkpoint.to_json())`` gives.
    Completed nodes, statuses, retries and visits grow with the run; encoding
    them whole at every node made each checkpoint cost O(nodes run so far).
    """

    def __init__(self) -> None:
        self._completed = _ListCache()
        self._maps = {
            "node_outcomes": _MapCache(ordered=True),
            "node_retries": _MapCache(ordered=False),
            "node_visits": _MapCache(ordered=False),
        }

    def encode(self, checkpoint: Checkpoint) -> str:
        done = len(self._completed.items)
        candidates = list(checkpoint.completed_nodes[done:])
        candidates += [n for n in (checkpoint.current_node, checkpoint.next_node) if n]
        parts = []
        for name in checkpoint.__dataclass_fields__:
            value = getattr(checkpoint, name)
            if name == "completed_nodes":
                text = self._completed.encode(value)
            elif name in self._maps:
                text = self._maps[name].encode(value, candidates)
            else:
                text = dumps_compact(value)
            parts.append(f'"{name}":{text}')
        return "{" + ",".join(parts) + "}"
