"""A checkpoint commit: the work tree as it is now, on top of the run's last commit.

:func:`commit_work_tree` stages every file git does not ignore (``git add -A``,
in the workspace's own index), writes the tree and, only when it differs from
the parent's, commits it with :func:`message`'s trailers. When git's look at the
work tree (``git status``) finds nothing changed, no add runs.

A file larger than the limit is kept as the parent had it and named, so that it
is never committed without a word. It is found by its size before the add, which
would read it whole. A git repository nested in the work tree (a folder with a
``.git`` of its own) is left out and named too: git would record only its commit
(a gitlink, mode 160000), not its files, and could not restore them, or would
refuse the whole commit when it has no commit yet. A nested repository the index
already records (a submodule) is kept as recorded: ``git add`` would look inside
it with its own config, which a step may have written (a new commit checked out
in a submodule is not checkpointed). The caller moves the branch.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

import anyio

from attractor.errors import WorkspaceError
from attractor.proc.gitguard import admin_of
from attractor.valueclass import frozen
from attractor.workspace.git import Git, failure

#: git's empty tree: the parent tree of a first commit.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: The mode git stores a nested repository under: its commit, not its files.
GITLINK = "160000"
#: A gitlink's mode as the index stores it (32 bits, big-endian): seen in the index's
#: bytes or not, the cheap first look before asking git for its gitlinks.
_GITLINK_MODE = (0o160000).to_bytes(4, "big")
#: What ``git add`` says of a nested repository that has no commit yet.
_NO_COMMIT = re.compile(r"^error: '(.+)' does not have a commit checked out$", re.MULTILINE)
#: How many nested repositories without a commit one checkpoint steps around.
_MAX_NESTED = 64
#: What ``git add`` says, exiting 1 after adding everything else, when a path it was
#: given (even to exclude) is one git ignores.
_IGNORED = "The following paths are ignored by one of your .gitignore files:"


@frozen
class Saved:
    """What one checkpoint did."""

    #: The commit that holds the work tree now (the parent itself when nothing changed).
    commit: str
    tree: str
    #: Whether a new commit was made.
    made: bool = False
    #: The paths that changed (added, modified or deleted) since the parent.
    files: tuple[str, ...] = ()
    #: Files left out because they are larger than the limit.
    refused: tuple[str, ...] = ()
    #: Nested git repositories left out (their files are not checkpointed).
    nested: tuple[str, ...] = ()


def message(subject: str, trailers: Mapping[str, str | int]) -> str:
    """A commit message: the subject, a blank line, then ``Key: value`` trailers."""
    body = "".join(f"{key}: {value}\n" for key, value in trailers.items())
    return f"{subject}\n\n{body}"


def exclusions(paths: Iterable[str]) -> list[str]:
    """Pathspecs that keep ``paths`` (relative to the work tree) out of ``git add``."""
    return [f":(exclude,literal){path}" for path in paths]


def _only_ignored(said: str, excluded: Iterable[str]) -> bool:
    """Whether a ``git add`` that exited 1 only named excluded paths git ignores anyway
    (it added everything else; nothing under them would have been added)."""
    lines = [line for line in said.splitlines() if line and not line.startswith("hint:")]
    return bool(lines) and lines[0] == _IGNORED and set(lines[1:]) <= set(excluded)


async def commit_work_tree(
    git: Git,
    work_tree: Path,
    parent: str | None,
    parent_tree: str | None,
    text: str,
    *,
    excluded: Iterable[str] = (),
    max_bytes: int | None = None,
) -> Saved:
    """Commit the work tree on top of ``parent`` when it changed (see the module doc)."""
    left_out = [*excluded, *await _gitlinks(git, work_tree)]
    listed = await _listed(git, left_out)
    # Too large to keep: left out before git reads them (it would hash, compress and
    # store each one whole, for minutes on a large sparse file, past any time limit).
    large = _too_large(work_tree, listed or (), max_bytes)
    unborn = () if listed == () else await _stage(git, [*left_out, *large])
    tree = await git.out("write-tree")
    if parent is not None and tree == parent_tree:
        return Saved(parent, tree, refused=large, nested=unborn)
    # The commit is made while the changes are read, one git process less to wait for;
    # when a file must be left out after all, it is made again (the first one dangles).
    commit, changes = await _commit_and_changes(git, tree, parent, parent_tree, text)
    # A nested repository the parent did not have: only its commit would be stored.
    nested = tuple(path for path, old, new in changes if new == GITLINK and old != GITLINK)
    files = tuple(path for path, _, _ in changes)
    # Seen only now: one that grew since the look above, or that a step staged itself.
    grown = _too_large(work_tree, tuple(f for f in files if f not in nested), max_bytes)
    refused = tuple(dict.fromkeys((*large, *grown)))
    if not grown and not nested:
        return Saved(commit, tree, True, files, refused, unborn)
    await _put_back(git, parent, (*grown, *nested))
    tree = await git.out("write-tree")
    files = tuple(f for f in files if f not in refused and f not in nested)
    nested += unborn
    if parent is not None and tree == parent_tree:
        return Saved(parent, tree, refused=refused, nested=nested)
    commit = await _commit(git, tree, parent, text)
    return Saved(commit, tree, True, files, refused, nested)


async def _commit(git: Git, tree: str, parent: str | None, text: str) -> str:
    args = ["commit-tree", "--no-gpg-sign", tree, *(["-p", parent] if parent else []), "-F", "-"]
    return await git.out(*args, input=text.encode())


async def _commit_and_changes(
    git: Git, tree: str, parent: str | None, parent_tree: str | None, text: str
) -> tuple[str, list[tuple[str, str, str]]]:
    """:func:`_commit` of ``tree`` and :func:`_changes` since the parent, at once."""
    made: list[str] = []

    async def commit() -> None:
        made.append(await _commit(git, tree, parent, text))

    try:
        async with anyio.create_task_group() as both:
            both.start_soon(commit)
            changes = await _changes(git, parent_tree or EMPTY_TREE, tree)
    except BaseExceptionGroup as errors:  # as either alone would have raised it
        raise errors.exceptions[0] from None
    return made[0], changes


async def _stage(git: Git, excluded: list[str]) -> tuple[str, ...]:
    """``git add -A``, stepping around nested repositories that have no commit yet
    (git refuses to add them, and with them everything else): those left out.

    An excluded path git ignores needs no excluding, and git says so (exit 1, all
    else added): that is a success, found without asking git first which paths it
    ignores (a process more for every workspace). Should a git word that otherwise,
    the paths it ignores are asked (``check-ignore``) and left out of the exclusions."""
    unborn: list[str] = []
    asked = False
    for _ in range(_MAX_NESTED):
        left_out = [*excluded, *unborn]
        code, _, said = await git.run("add", "-A", "--", ".", *exclusions(left_out), check=False)
        if code == 0 or (code == 1 and _only_ignored(said, left_out)):
            return tuple(unborn)
        if code == 1 and not asked:  # perhaps an ignored path, worded otherwise
            asked = True
            excluded = await _not_ignored(git, excluded)
            continue
        found = [path.rstrip("/") for path in _NO_COMMIT.findall(said)]
        if not found or any(path in unborn for path in found):
            raise failure(("add", "-A"), said)
        unborn += found
    raise WorkspaceError(
        f"more than {_MAX_NESTED} nested git repositories without a commit in the work "
        "tree: remove their .git folders, or run with --workspace none"
    )


async def _listed(git: Git, excluded: list[str]) -> tuple[str, ...] | None:
    """The paths ``git add -A`` would look at (changed, deleted or new, not ignored),
    from git's stat cache without reading any file whole (it also refreshes that cache,
    as the add would); ``None`` when git cannot say, and the add then finds out."""
    args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"]
    args += ["--ignore-submodules=all", "--", ".", *exclusions(excluded)]
    code, out, _ = await git.run(*args, check=False)
    if code != 0:
        return None
    return tuple(entry[3:] for entry in out.split("\0") if len(entry) > 3)


async def _gitlinks(git: Git, work_tree: Path) -> list[str]:
    """The nested repositories the index records (submodules, or one a step added),
    kept as recorded: ``git add`` would run ``git status`` inside each, with that
    repository's config, whose fsmonitor, filters or hooks a step could have
    written, outside the sandbox. Asked of git only when the index may hold one."""
    index = _index_of(git, work_tree)
    try:
        data = index.read_bytes() if index is not None else b""
    except OSError:
        data = b""
    if _GITLINK_MODE not in data:  # no entry has the mode: nothing to ask
        return []
    out = await git.out("ls-files", "--stage", "-z")
    entries = (line.partition("\t") for line in out.split("\0") if line)
    return [path for info, _, path in entries if info.startswith(GITLINK + " ")]


def _index_of(git: Git, work_tree: Path) -> Path | None:
    """The index file the workspace's git uses (its own, a worktree's, the checkout's)."""
    if "GIT_INDEX_FILE" in git.env:
        return Path(git.env["GIT_INDEX_FILE"])
    if "GIT_DIR" in git.env:
        return Path(git.env["GIT_DIR"]) / "index"
    dot = work_tree / ".git"
    if dot.is_dir():
        return dot / "index"
    admin = admin_of(dot)  # a worktree's .git file names its own git directory
    return None if admin is None else admin / "index"


async def _not_ignored(git: Git, paths: list[str]) -> list[str]:
    """``paths`` less those git ignores (git refuses to exclude an ignored path)."""
    if not paths:
        return []
    names = "".join(f"{p}\0" for p in paths).encode()
    _, out, _ = await git.run(
        "check-ignore", "--no-index", "-z", "--stdin", input=names, check=False
    )
    ignored = set(out.split("\0"))
    return [p for p in paths if p not in ignored]


async def changed_paths(git: Git, before: str, after: str) -> tuple[str, ...]:
    """The paths that differ between two trees (or commits)."""
    if before == after:
        return ()
    out = await git.out("diff-tree", "-r", "-z", "--no-renames", "--name-only", before, after)
    return tuple(p for p in out.split("\0") if p)


async def _changes(git: Git, before: str, after: str) -> list[tuple[str, str, str]]:
    """``(path, old mode, new mode)`` of each path that differs between two trees."""
    out = await git.out("diff-tree", "-r", "-z", "--no-renames", "--raw", before, after)
    fields = out.split("\0")
    changes = []
    for header, path in zip(fields[::2], fields[1::2], strict=False):
        modes = header.lstrip(":").split(" ")
        if path and len(modes) >= 2:
            changes.append((path, modes[0], modes[1]))
    return changes


def _too_large(work_tree: Path, files: tuple[str, ...], max_bytes: int | None) -> tuple[str, ...]:
    """The regular files among ``files`` larger than ``max_bytes``."""
    if max_bytes is None:
        return ()
    refused = []
    for path in files:
        try:
            info = os.lstat(work_tree / path)
        except OSError:
            continue  # deleted: nothing to refuse
        if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
            refused.append(path)
    return tuple(refused)


async def _put_back(git: Git, parent: str | None, paths: tuple[str, ...]) -> None:
    """The index entries of ``paths`` as ``parent`` has them (none when it has none)."""
    if parent is None:
        # Plumbing, not ``git rm --cached``: that refuses an entry whose staged content
        # differs from the file and from a HEAD (a nested repository, in the first
        # commit of a snapshot), and it reads the paths as patterns.
        await git.run("update-index", "--force-remove", "--", *paths)
    else:
        await git.run("reset", "-q", parent, "--", *paths)
