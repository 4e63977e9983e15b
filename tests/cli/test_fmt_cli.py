"""``attractor fmt FILE... [--check]`` through the real CLI."""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli.runkit import invoke, write

ROOT = Path(__file__).resolve().parents[2]
WRITTEN = """digraph p {
  start [shape=Mdiamond]
  w [label="W" model="m"]
  done [shape=Msquare]
  start -> w -> done
}
"""
CANONICAL = """digraph p {
    start [shape=Mdiamond]
    w [label="W", llm_model="m"]
    done [shape=Msquare]
    start -> w -> done
}
"""


def test_check_lists_each_file_that_would_change_and_exits_1(workspace: Path) -> None:
    write(workspace / "a.dot", WRITTEN)
    write(workspace / "b.dot", CANONICAL)
    result = invoke(["fmt", "--check", "a.dot", "b.dot"])
    assert result.exit_code == 1
    assert result.stdout == "a.dot: would be reformatted (run: attractor fmt a.dot)\n"
    assert (workspace / "a.dot").read_text() == WRITTEN  # --check writes nothing
    assert invoke(["fmt", "--check", "b.dot"]).exit_code == 0


def test_fmt_rewrites_in_place_keeping_the_file_mode_and_then_has_nothing_to_do(
    workspace: Path,
) -> None:
    path = write(workspace / "a.dot", WRITTEN)
    os.chmod(path, 0o640)
    result = invoke(["fmt", "a.dot"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "formatted a.dot\n"
    assert path.read_text() == CANONICAL
    assert path.stat().st_mode & 0o777 == 0o640
    again = invoke(["fmt", "a.dot"])
    assert (again.exit_code, again.stdout) == (0, "")


def test_a_file_that_does_not_parse_is_refused_in_one_line(workspace: Path) -> None:
    broken = (ROOT / "examples" / "invalid" / "syntax.dot").read_text()
    path = write(workspace / "broken.dot", broken)
    result = invoke(["fmt", "broken.dot"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: broken.dot:")
    assert len(result.stderr.splitlines()) == 1
    assert path.read_text() == broken
    missing = invoke(["fmt", "--check", "nothing.dot"])
    assert missing.exit_code == 2 and missing.stderr.startswith("error: nothing.dot")


def test_a_pipeline_saved_with_a_byte_order_mark_lints_runs_and_formats(workspace: Path) -> None:
    path = workspace / "bom.dot"
    path.write_bytes(b"\xef\xbb\xbf" + WRITTEN.replace("\n", "\r\n").encode())
    assert invoke(["lint", "bom.dot"]).exit_code == 0
    assert invoke(["run", "bom.dot", "--backend", "simulate", "-q"]).exit_code == 0
    assert invoke(["fmt", "bom.dot"]).exit_code == 0
    assert path.read_text(encoding="utf-8") == CANONICAL
