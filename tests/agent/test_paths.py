"""Every tool path stays inside the working directory."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from attractor.errors import PathEscapeError, ToolError
from attractor.proc.hostfs.beneath import Beneath


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("secret")
    return work


def resolve_inside(workdir: Path, raw: str) -> Path:
    """The absolute path the tools' walk resolves ``raw`` to."""
    with Beneath(workdir) as beneath:
        return beneath.root.joinpath(*beneath.locate(raw))


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


# -- the descriptor walk the tools open through ------------------------------------------


def test_symlinks_inside_resolve_through_dotdot_and_chains(workdir: Path) -> None:
    root = workdir.resolve()
    (workdir / "sub" / "deep").mkdir()
    os.symlink("sub/deep", workdir / "d")
    os.symlink("../../sub", workdir / "sub" / "deep" / "up")
    os.symlink("d", workdir / "chain")
    assert resolve_inside(workdir, "d/up/new.txt") == root / "sub" / "new.txt"
    assert resolve_inside(workdir, "chain/..") == root / "sub"  # '..' of the target
    assert resolve_inside(workdir, "missing/dir/../f.txt") == root / "missing" / "f.txt"


def test_a_symlink_loop_is_an_eloop_error(workdir: Path) -> None:
    os.symlink("b", workdir / "a")
    os.symlink("a", workdir / "b")
    with pytest.raises(OSError) as caught:
        resolve_inside(workdir, "a/x.txt")
    assert caught.value.errno == errno.ELOOP


def test_a_file_used_as_a_directory_is_enotdir(workdir: Path) -> None:
    (workdir / "f").write_text("")
    with pytest.raises(NotADirectoryError):
        resolve_inside(workdir, "f/x")


def test_open_reads_through_the_walked_descriptor(workdir: Path) -> None:
    (workdir / "sub" / "a.txt").write_text("hello")
    os.symlink(workdir / "sub", workdir / "abs")  # an absolute link inside
    with Beneath(workdir) as beneath, beneath.open("abs/a.txt") as found:
        assert os.read(found.value, 100) == b"hello"
        assert found.parts == ("sub", "a.txt") and found.name == "a.txt"


def test_place_creates_parents_but_never_through_a_link_outside(workdir: Path) -> None:
    os.symlink(workdir.parent, workdir / "up")
    with Beneath(workdir) as beneath:
        with beneath.place("new/dir/f.txt", create=True) as found:
            assert found.value is None and found.parts == ("new", "dir", "f.txt")
        assert (workdir / "new" / "dir").is_dir()
        with pytest.raises(PathEscapeError), beneath.place("up/made/f.txt", create=True):
            pass
    assert not (workdir.parent / "made").exists()
