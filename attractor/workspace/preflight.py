"""Which workspace a run gets, checked before anything runs.

:func:`preflight` resolves the mode (``worktree`` inside a git repository,
``snapshot`` elsewhere, unless the settings name one) and refuses a repository
a run cannot start from: a rebase or merge in progress, no commit yet, a bare
repository, no ``git``. Each refusal is a :class:`~attractor.errors.UsageError`
(exit 2) of one line that says what to do, raised before the run directory
exists.
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attractor.errors import UsageError, WorkspaceError
from attractor.valueclass import frozen

if TYPE_CHECKING:
    from attractor.workspace.git import Git
    from attractor.workspace.workspace import Workspace

#: Files in a git directory that say an operation is half done, and how to end it.
_IN_PROGRESS = (
    ("rebase-merge", "a rebase", "git rebase --continue or git rebase --abort"),
    ("rebase-apply", "a rebase", "git rebase --continue or git rebase --abort"),
    ("MERGE_HEAD", "a merge", "git merge --continue or git merge --abort"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue or --abort"),
    ("REVERT_HEAD", "a revert", "git revert --continue or --abort"),
)
#: Files larger than this are left out of checkpoints, with a warning.
MAX_FILE_BYTES = 50 * 1024 * 1024


@frozen
class WorkspacePlan:
    """The workspace a run will get: its mode and where it comes from."""

    mode: str
    #: Where the mode came from: a setting's source, or why the default was chosen.
    source: str
    #: The folder the run's stages would work in without a workspace (the workdir).
    workdir: Path
    #: worktree: the repository's top folder and git directories.
    repo: Path | None = None
    git_dir: Path | None = None
    common_dir: Path | None = None
    #: worktree: HEAD's commit and tree when the plan was made (the run starts there).
    head: str | None = None
    head_tree: str | None = None
    #: A command run once in each new worktree, and ignored paths linked into it.
    setup: str | None = None
    #: Where ``setup`` runs, in one line (the run's boundary; '' when not worked out).
    setup_boundary: str = ""
    links: tuple[str, ...] = ()
    max_file_bytes: int = MAX_FILE_BYTES
    #: A resumed run's workspace, as its manifest recorded it.
    record: dict[str, Any] = field(default_factory=dict)
    #: A child run's: the parent's open workspace, which it works in too.
    shared: Workspace | None = None

    def describe(self) -> str:
        """One line for ``--dry-run``."""
        if self.mode == "none":
            return (
                f"workspace: none ({self.source}): stages work in {self.workdir}, "
                "no checkpoints of the files (no diff, fork or restore on resume)"
            )
        if self.mode == "snapshot":
            return (
                f"workspace: snapshot ({self.source}): stages work in {self.workdir}; "
                "a checkpoint after each stage goes to a git directory in the run directory"
            )
        extra = [self._links()]
        if self.setup:
            where = f" (boundary: {self.setup_boundary})" if self.setup_boundary else ""
            extra.append(f"runs {self.setup!r} once in it{where}")
        return (
            f"workspace: worktree ({self.source}): the run works in a worktree of {self.repo} "
            "on branch attractor/RUN_ID, started from HEAD plus uncommitted changes; "
            + "; ".join(extra)
        )

    def _links(self) -> str:
        """What of ``workspace_link`` the worktree gets: the paths the checkout has."""
        if not self.links:
            return "links nothing (workspace_link is none)"
        repo = self.repo or self.workdir
        there = [name for name in self.links if os.path.lexists(repo / name)]
        if not there:
            return f"links nothing (the checkout has none of {', '.join(self.links)})"
        return f"links {', '.join(there)} from the checkout"


async def preflight(
    mode: str | None,
    source: str,
    workdir: Path,
    *,
    setup: str | None = None,
    links: tuple[str, ...] = (),
) -> WorkspacePlan:
    """The workspace ``mode`` (None: the default) gives a run in ``workdir``.

    Raises:
        UsageError: the repository cannot give a run a workspace now, or git is missing.
    """
    workdir = _resolved(workdir)
    if mode == "none":  # git is not even loaded
        return WorkspacePlan("none", source, workdir)
    from attractor.workspace.git import git_path

    if git_path() is None:
        raise UsageError(
            "git is not installed, and the run's workspace needs it: install git, "
            "or pass --workspace none to run without checkpoints of the files"
        )
    found = await _repository(workdir)
    if mode is None:
        if found is None:
            return WorkspacePlan(
                "snapshot", "default: the workdir is not in a git repository", workdir
            )
        mode, source = "worktree", f"default: {workdir} is in a git repository"
    if mode == "snapshot":
        return WorkspacePlan("snapshot", source, workdir)
    return await _worktree_plan(found, source, workdir, setup, links)


def _resolved(path: Path) -> Path:
    return path.resolve()


def _git(cwd: Path) -> Git:
    """git run from ``cwd`` (its module loads with the first question: none for ``none``)."""
    from attractor.workspace.git import Git

    return Git(cwd)


_ASKED = ("--is-bare-repository", "--is-inside-work-tree", "--absolute-git-dir", "--git-common-dir")
_KEYS = ("bare", "inside", "git_dir", "common")


async def _repository(workdir: Path) -> dict[str, str] | None:
    """What ``git rev-parse`` says of ``workdir``; None outside any repository."""
    # A checkout with a commit, the usual case, says everything in one command; it
    # fails in a bare repository, without a commit, or outside any repository.
    code, out, _ = await _git(workdir).run(
        "rev-parse", *_ASKED, "--show-toplevel", "HEAD^{commit}", "HEAD^{tree}", check=False
    )
    lines = out.splitlines()
    if code == 0 and len(lines) == 7:
        return dict(zip((*_KEYS, "top", "head", "tree"), lines, strict=True))
    code, out, _ = await _git(workdir).run("rev-parse", *_ASKED, check=False)
    if code != 0:
        return None
    bare, inside, git_dir, common = (out.splitlines() + ["", "", "", ""])[:4]
    info = {"bare": bare, "inside": inside, "git_dir": git_dir, "common": common}
    if inside == "true":
        info["top"] = await _git(workdir).out("rev-parse", "--show-toplevel")
    return info


async def _worktree_plan(
    found: dict[str, str] | None,
    source: str,
    workdir: Path,
    setup: str | None,
    links: tuple[str, ...],
) -> WorkspacePlan:
    other = "or pass --workspace snapshot (or none)"
    if found is None:
        raise UsageError(
            f"{source} worktree needs a git repository, and {workdir} is not in one: "
            f"run git init and commit, {other}"
        )
    if found["bare"] == "true" or found["inside"] != "true":
        raise UsageError(
            f"{workdir} is a bare git repository (or inside a .git folder), which has no "
            f"files to work on: run in a checkout of it (git clone), {other}"
        )
    git_dir = Path(found["git_dir"])
    for name, what, how in _IN_PROGRESS:
        if (git_dir / name).exists():
            raise UsageError(
                f"{found['top']} is in the middle of {what}: finish it ({how}) "
                f"before starting a run, {other}"
            )
    top = Path(found["top"])
    try:
        if "head" not in found:
            await _git(top).out("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except WorkspaceError:
        raise UsageError(
            f"{top} has no commits yet, so a run has no HEAD to start from: "
            f"commit something first (git add -A && git commit), {other}"
        ) from None
    common = Path(found["common"])
    if not common.is_absolute():
        common = (workdir / common).resolve()
    return WorkspacePlan(
        "worktree",
        source,
        workdir,
        repo=top,
        git_dir=git_dir,
        common_dir=common,
        head=found.get("head"),
        head_tree=found.get("tree"),
        setup=setup,
        links=links,
    )
