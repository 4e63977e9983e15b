"""The write side of attractor.fileio: atomic writes and the modes of what is written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attractor.fileio.writes import USER_FILE, atomic_write_text


def test_atomic_writes_are_private_unless_the_file_is_the_users(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        state = tmp_path / "checkpoint.json"
        atomic_write_text(state, "{}")
        assert stat.S_IMODE(state.stat().st_mode) == 0o600
        mine = tmp_path / "mine.dot"
        atomic_write_text(mine, "a", mode=USER_FILE)
        assert stat.S_IMODE(mine.stat().st_mode) == 0o664
        mine.chmod(0o640)
        atomic_write_text(mine, "b", mode=USER_FILE)
        assert stat.S_IMODE(mine.stat().st_mode) == 0o640 and mine.read_text() == "b"
    finally:
        os.umask(old)
