"""Refs read from a repository's files (workspace/refs.py) agree with git itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.workspace.refs import any_ref, read_ref, resolve_head
from tests.workspace.gitkit import git, make_repo


def _git_finds(repo: Path, *prefixes: str) -> bool:
    return bool(git(repo, "for-each-ref", "--count=1", "--format=%(refname)", *prefixes).strip())


PREFIXES = [
    ("refs/heads/attractor/run",),
    ("refs/heads/attractor/run-2",),
    ("refs/heads/attractor/ru",),
    ("refs/attractor/run",),
    ("refs/heads/attractor/other", "refs/attractor/run"),
]


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_a_ref_is_found_as_git_for_each_ref_finds_it(tmp_path: Path, packed: bool) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "attractor/run")
    git(repo, "update-ref", "refs/attractor/run/lost/1", "HEAD")
    if packed:
        git(repo, "pack-refs", "--all")
        assert not (repo / ".git" / "refs" / "heads" / "attractor" / "run").exists()
    for prefixes in PREFIXES:
        assert any_ref(repo / ".git", prefixes) is _git_finds(repo, *prefixes), prefixes


def test_a_folder_git_left_empty_holds_no_ref(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "update-ref", "refs/attractor/run/lost/1", "HEAD")
    git(repo, "update-ref", "-d", "refs/attractor/run/lost/1")
    (repo / ".git" / "refs" / "attractor" / "run" / "lost").mkdir(parents=True, exist_ok=True)

    assert any_ref(repo / ".git", ["refs/attractor/run"]) is False
    assert not _git_finds(repo, "refs/attractor/run")


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_head_resolves_to_the_commit_git_names(tmp_path: Path, packed: bool) -> None:
    repo = make_repo(tmp_path / "repo")
    if packed:
        git(repo, "pack-refs", "--all")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert resolve_head(repo / ".git", repo / ".git") == head

    git(repo, "checkout", "-q", "--detach")
    assert resolve_head(repo / ".git", repo / ".git") == head


def test_what_the_files_cannot_settle_is_left_to_git(tmp_path: Path) -> None:
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q")
    # A branch with no commit yet: HEAD names a ref that does not exist.
    assert resolve_head(unborn / ".git", unborn / ".git") is None

    repo = make_repo(tmp_path / "repo")
    (repo / ".git" / "packed-refs").write_bytes(b"\xff\xfe not text")
    assert any_ref(repo / ".git", ["refs/heads/attractor/run"]) is None
    # A repository keeping its refs in a reftable (git 2.45 on) is not read at all.
    (repo / ".git" / "packed-refs").unlink()
    (repo / ".git" / "reftable").mkdir()
    assert any_ref(repo / ".git", ["refs/heads/main"]) is None
    assert resolve_head(repo / ".git", repo / ".git") is None


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_a_branch_reads_as_git_reads_it(tmp_path: Path, packed: bool) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "attractor/run")
    if packed:
        git(repo, "pack-refs", "--all")
    head = git(repo, "rev-parse", "attractor/run").strip()
    assert read_ref(repo / ".git", "refs/heads/attractor/run") == head
    assert read_ref(repo / ".git", "refs/heads/attractor/none") is None
