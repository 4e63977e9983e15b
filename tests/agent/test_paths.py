"""Every tool path stays inside the working directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attractor.agent.tools.paths import resolve_inside
from attractor.errors import PathEscapeError, ToolError


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("secret")
    return work


def test_relative_and_inside_absolute_paths_resolve(workdir: Path) -> None:
    root = workdir.resolve()
    assert resolve_inside(workdir, "sub/a.txt") == root / "sub" / "a.txt"
    assert resolve_inside(workdir, ".") == root
    assert resolve_inside(workdir, str(root / "sub")) == root / "sub"
    assert resolve_inside(workdir, "sub/../b.txt") == root / "b.txt"


@pytest.mark.parametrize("raw", ["..", "../secret.txt", "sub/../../secret.txt", "/etc/passwd"])
def test_escapes_are_refused(workdir: Path, raw: str) -> None:
    with pytest.raises(PathEscapeError, match="outside the working directory"):
        resolve_inside(workdir, raw)


def test_absolute_path_outside_is_refused(workdir: Path) -> None:
    with pytest.raises(PathEscapeError):
        resolve_inside(workdir, str(workdir.parent / "secret.txt"))


def test_sibling_with_a_common_prefix_is_outside(workdir: Path) -> None:
    (workdir.parent / "work2").mkdir()
    with pytest.raises(PathEscapeError):
        resolve_inside(workdir, str(workdir.parent / "work2"))


def test_symlinks_that_escape_are_refused(workdir: Path) -> None:
    os.symlink(workdir.parent / "secret.txt", workdir / "link.txt")
    os.symlink(workdir.parent, workdir / "up")
    with pytest.raises(PathEscapeError):
        resolve_inside(workdir, "link.txt")
    with pytest.raises(PathEscapeError):
        resolve_inside(workdir, "up/secret.txt")


def test_symlinks_inside_are_fine(workdir: Path) -> None:
    (workdir / "sub" / "real.txt").write_text("x")
    os.symlink(workdir / "sub" / "real.txt", workdir / "alias.txt")
    assert resolve_inside(workdir, "alias.txt") == (workdir / "sub" / "real.txt").resolve()


@pytest.mark.parametrize("raw", ["", "  ", "a\0b"])
def test_empty_or_nul_paths_are_tool_errors(workdir: Path, raw: str) -> None:
    with pytest.raises(ToolError):
        resolve_inside(workdir, raw)
