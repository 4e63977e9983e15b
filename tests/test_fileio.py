"""Bounded reads and the JSON nesting limit of attractor.fileio."""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path

import pytest

from attractor.errors import InputFileError, PipelinePathError
from attractor.fileio.confine import confine_path, read_confined_text
from attractor.fileio.jsonio import MAX_JSON_DEPTH, json_depth, json_lines, loads_json
from attractor.fileio.reads import (
    MiB,
    format_size,
    read_bounded,
    read_head,
    read_lines,
    read_tail,
    require_regular,
)


def _raises(path: str | Path, limit: int = MiB) -> InputFileError:
    with pytest.raises(InputFileError) as caught:
        read_bounded(path, limit, "pipeline file")
    return caught.value


def test_reads_utf8_text_with_newlines_translated_like_read_text(tmp_path: Path) -> None:
    path = tmp_path / "p.dot"
    path.write_bytes("digraph é {\r\n a\r b\n}".encode())
    assert read_bounded(path, MiB, "pipeline file") == path.read_text(encoding="utf-8")
    assert read_bounded(path, MiB, "pipeline file") == "digraph é {\n a\n b\n}"


def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    assert read_bounded(path, 1000, "file") == "x" * 1000


def test_one_byte_over_the_limit_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "f.dot"
    path.write_bytes(b"x" * 1001)
    error = _raises(path, 1000)
    assert error.kind == "too_large" and error.limit == 1000
    assert str(error) == (
        f"{path}: cannot read: 1001 bytes, over the 1000 bytes limit for a pipeline file; "
        "check that this is the right file"
    )


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_file_whose_size_lies_is_cut_at_the_limit() -> None:
    # /proc files report size 0; the bound holds while reading too.
    assert os.stat("/proc/self/status").st_size == 0
    error = _raises("/proc/self/status", 10)
    assert error.kind == "too_large"
    assert "larger than the 10 bytes limit" in error.reason


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    error = _raises(fifo)  # no writer: a blocking open would wait forever
    assert error.kind == "not_regular"
    assert str(error) == (
        f"{fifo}: cannot read: a FIFO (named pipe), not a regular file; "
        "pass a regular pipeline file"
    )


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/dev/zero", "a character device"),
        ("/dev/urandom", "a character device"),
        ("/", "a directory"),
    ],
)
def test_devices_and_directories_are_refused(path: str, kind: str) -> None:
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    error = _raises(path)
    assert error.kind == "not_regular"
    assert error.reason == f"cannot read: {kind}, not a regular file"


def test_a_symlink_to_a_regular_file_is_fine_and_to_a_device_is_not(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("ok", encoding="utf-8")
    (tmp_path / "good").symlink_to(tmp_path / "real")
    (tmp_path / "bad").symlink_to("/dev/zero")
    assert read_bounded(tmp_path / "good", MiB, "file") == "ok"
    assert _raises(tmp_path / "bad").kind == "not_regular"


def test_missing_and_non_utf8_files(tmp_path: Path) -> None:
    missing = _raises(tmp_path / "nope.dot")
    assert missing.kind == "os" and missing.errno == errno.ENOENT
    assert str(missing).endswith("nope.dot: cannot read: No such file or directory; check the path")
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    binary = _raises(tmp_path / "bin")
    assert binary.kind == "not_utf8"
    assert str(binary).endswith("cannot read: not UTF-8 text; save the pipeline file as UTF-8")


def test_require_regular_allows_missing_files_only(tmp_path: Path) -> None:
    require_regular(tmp_path / "absent", "run file")
    (tmp_path / "file").write_text("", encoding="utf-8")
    require_regular(tmp_path / "file", "run file")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputFileError) as caught:
        require_regular(tmp_path / "fifo", "run file")
    assert caught.value.reason == "a FIFO (named pipe), not a regular file"


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("", 0),
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "{{{"]', 1),  # brackets inside strings do not count
        ('["a\\"[[[", "\\\\"]', 1),  # nor after an escaped quote or backslash
        ("[" * 5000 + "]" * 5000, 5000),
    ],
)
def test_json_depth(text: str, depth: int) -> None:
    assert json_depth(text) == depth


def test_loads_json_accepts_the_limit_and_refuses_one_more(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json.dumps(loads_json(at_limit, path, "checkpoint")) == at_limit
    with pytest.raises(InputFileError) as caught:
        loads_json("[" + at_limit + "]", path, "checkpoint")
    error = caught.value
    assert error.kind == "too_deep" and error.limit == MAX_JSON_DEPTH
    assert error.reason == f"checkpoint nests JSON deeper than the {MAX_JSON_DEPTH}-level limit"


def test_loads_json_refuses_what_would_exhaust_recursion(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert sys.getrecursionlimit() < 100_000
    with pytest.raises(InputFileError, match="deeper than"):
        loads_json(deep, tmp_path / "c.json", "checkpoint")
    with pytest.raises(InputFileError, match="deeper than"):
        loads_json('{"a": ' + "{" * 200, tmp_path / "c.json", "checkpoint")  # invalid and deep


def test_loads_json_leaves_invalid_json_to_the_caller(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        loads_json("{not json", tmp_path / "c.json", "checkpoint")


def test_many_shallow_brackets_are_fine(tmp_path: Path) -> None:
    text = json.dumps([{"a": [i]} for i in range(10_000)])
    assert len(loads_json(text, tmp_path / "c.json", "checkpoint")) == 10_000


@pytest.mark.parametrize(
    ("size", "text"),
    [(512, "512 bytes"), (16 * MiB, "16 MiB"), (16 * MiB + MiB // 2, "16.5 MiB")],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text


# -- streamed and partial reads ------------------------------------------------------


def _lines(path: Path, **limits: int) -> list[tuple[int, bytes]]:
    return list(read_lines(path, "events file", **limits))


def test_read_lines_yields_whole_lines_with_where_each_ends(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": 2}\n{"cut sh')
    assert _lines(path) == [(9, b'{"a": 1}'), (10, b""), (19, b'{"b": 2}')]
    assert _lines(path, offset=10) == [(19, b'{"b": 2}')]
    assert _lines(path, offset=10**30) == []  # past the end: nothing, not an overflow


def test_read_lines_streams_across_chunks(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    rows = [b"x" * (MiB // 3 + n) for n in range(7)]  # lines straddle the 1 MiB chunks
    path.write_bytes(b"".join(row + b"\n" for row in rows))
    found = _lines(path)
    assert [line for _, line in found] == rows
    assert found[-1][0] == path.stat().st_size


def test_read_lines_refuses_a_line_over_its_limit_without_reading_on(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with path.open("wb") as fh:  # sparse: a 1 GiB "line" of NULs costs no disk
        fh.write(b"ok\n")
        fh.truncate(1024 * MiB)
    lines = read_lines(path, "events file", line_limit=2 * MiB)
    assert next(lines) == (3, b"ok")
    with pytest.raises(InputFileError) as caught:
        next(lines)
    assert caught.value.kind == "too_large"
    assert "a line longer than the 2 MiB limit for an events file" in str(caught.value)


def test_read_lines_refuses_more_than_its_total(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"row\n" * (MiB // 2))  # 2 MiB
    with pytest.raises(InputFileError) as caught:
        _lines(path, total_limit=MiB)
    assert caught.value.kind == "too_large"


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "dangling"])
def test_streamed_and_partial_reads_refuse_what_is_not_a_regular_file(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "run.file"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "gone")
    for read in (
        lambda: _lines(path),
        lambda: read_head(path, 10, "lock file"),
        lambda: read_tail(path, 10, "stage file"),
    ):
        with pytest.raises(InputFileError) as caught:
            read()
        assert caught.value.kind == "not_regular", caught.value


def test_head_and_tail_read_only_their_part(tmp_path: Path) -> None:
    path = tmp_path / "stdout.txt"
    path.write_bytes(b"0123456789")
    assert read_head(path, 4, "file") == b"0123"
    assert read_tail(path, 4, "file") == (b"6789", True)
    assert read_tail(path, 40, "file") == (b"0123456789", False)


# -- paths a pipeline names ----------------------------------------------------------


def test_confine_path_follows_links_and_allows_only_the_roots(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "in.txt").write_text("in")
    (root / "link-in").symlink_to(root / "in.txt")
    (root / "link-out").symlink_to(outside)
    where = {"attribute": "human.show", "node": "gate"}
    assert confine_path(root / "link-in", [root], **where) == root / "in.txt"
    assert confine_path(root / "not-yet", [root], **where) == root / "not-yet"
    for escaping in (root / "link-out" / "x", root / ".." / "outside", Path("/etc/passwd")):
        with pytest.raises(PipelinePathError) as caught:
            confine_path(escaping, [root], **where)
        assert caught.value.kind == "outside"
        assert str(caught.value).startswith(f"human.show of node gate: {escaping}: resolves to")


def test_read_confined_text_cuts_or_refuses_a_large_file(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"a" * 100)
    where = {"attribute": "human.show", "node": "gate"}
    assert read_confined_text(path, [tmp_path], 10, cut=True, **where) == "a" * 10
    with pytest.raises(PipelinePathError) as caught:
        read_confined_text(path, [tmp_path], 10, **where)
    assert caught.value.kind == "too_large"
    assert "point human.show at a smaller file" in str(caught.value)


def test_a_byte_order_mark_at_the_start_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfdigraph \xef\xbb\xbf")
    assert read_bounded(path, 100, "pipeline file") == "digraph \ufeff"


def test_json_lines_writes_one_field_a_line_as_json_dumps_would() -> None:
    from attractor.handlers.outcome import StageStatus

    data = {
        "outcome": StageStatus.SUCCESS,
        "notes": 'é "quoted"\nline',
        "context_updates": {"a": [1, None, True]},
        7: 1.5,
        "path": Path("/x"),
    }
    fields = [f"  {json.dumps(str(k))}: {json.dumps(v, default=str)}" for k, v in data.items()]
    for _ in range(2):  # the second time from the cache of field starts
        assert json_lines(data) == "{\n" + ",\n".join(fields) + "\n}\n"
    assert json_lines({}) == "{}\n"
