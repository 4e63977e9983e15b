"""The engine's own files in a folder a step can write: never opened through what it left."""

from __future__ import annotations

import os
from pathlib import Path

from attractor.ownfiles import create_new, open_own, own_folder

_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


def _write(path: Path, data: bytes, dir_fd: int | None = None) -> None:
    fd = open_own(path, _WRITE, 0o600, dir_fd=dir_fd)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def test_a_link_under_the_name_is_replaced_and_its_target_left_alone(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (tmp_path / "status.json").symlink_to(victim)
    _write(tmp_path / "status.json", b"engine\n")
    assert victim.read_text() == "mine\n"
    assert not (tmp_path / "status.json").is_symlink()
    assert (tmp_path / "status.json").read_bytes() == b"engine\n"


def test_a_fifo_is_replaced_whether_or_not_someone_reads_it(tmp_path: Path) -> None:
    unread, read = tmp_path / "unread", tmp_path / "read"
    os.mkfifo(unread)
    os.mkfifo(read)
    reader = os.open(read, os.O_RDONLY | os.O_NONBLOCK)  # a step's process holding it open
    try:
        for path in (unread, read):
            _write(path, b"x" * 1_000_000)  # far more than a pipe holds
            assert path.read_bytes() == b"x" * 1_000_000
    finally:
        os.close(reader)


def test_a_regular_file_is_written_in_place(tmp_path: Path) -> None:
    (tmp_path / "log").write_text("old and longer\n")
    os.link(tmp_path / "log", tmp_path / "same")
    _write(tmp_path / "log", b"new\n")
    assert (tmp_path / "same").read_bytes() == b"new\n"  # the same file: truncated


def test_a_folder_swapped_for_a_link_is_made_again(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "logs").symlink_to(outside)
    folder = own_folder(tmp_path / "logs", 0o700)
    try:
        _write(Path("term-1.log"), b"output\n", dir_fd=folder)
    finally:
        os.close(folder)
    assert list(outside.iterdir()) == []
    assert (tmp_path / "logs" / "term-1.log").read_bytes() == b"output\n"


def test_a_temporary_someone_named_first_is_made_new(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    (tmp_path / ".tmp").symlink_to(victim)
    os.close(create_new(tmp_path / ".tmp", 0o600))
    assert victim.read_text() == "mine\n" and not (tmp_path / ".tmp").is_symlink()
