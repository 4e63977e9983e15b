"""The run's workspace while it runs: checkpoint, restore, and what to record of it.

A :class:`Workspace` is a work tree, the git directory its checkpoints go to,
and the branch ``attractor/RUN_ID`` they are committed on (``refs/heads/...``
in the user's repository for a worktree; in the run directory's own git
directory for a snapshot). Its commands always name the git directory and the
work tree explicitly, so a stage that deletes the worktree's ``.git`` file
cannot send them to another repository.

Nothing is thrown away: :meth:`Workspace.restore` first commits whatever the
work tree holds and keeps it, with any branch commits it would drop, under
``refs/attractor/RUN_ID/lost/N`` (``git show attractor/RUN_ID/lost/N``).

Files and branch move together (:meth:`Workspace.move`): the move is written
down first (:data:`MOVING`, in the workspace's git directory), then the branch
is moved, then the work tree; a failure puts the branch and the files back, and
a move cut short (``kill -9``) is known as such on resume, so its half-moved
files are never taken for edits made by hand.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

import anyio

from attractor.errors import WorkspaceError
from attractor.fileio.writes import atomic_write_json
from attractor.valueclass import mutable
from attractor.workspace.commits import Saved, commit_work_tree, message
from attractor.workspace.git import Git
from attractor.workspace.names import TRAILER
from attractor.workspace.refs import read_plain, read_ref

#: In the workspace's git directory while the files and branch move (restore, merge).
MOVING = "attractor-moving.json"
#: In a parallel branch's git directory while one of its stages runs: a resume
#: then knows its work tree holds that stage's half-done files.
STAGE_MARK = "attractor-stage.json"


def branch_of(run_id: str) -> str:
    return f"attractor/{run_id}"


def lost_prefix(run_id: str) -> str:
    return f"refs/attractor/{run_id}/lost/"


@mutable
class Workspace:
    """A work tree with its checkpoint branch (see the module doc)."""

    mode: str
    run_id: str
    git: Git
    work_tree: Path
    #: Where the stages work: the work tree, or the folder of it the workdir names.
    workdir: Path
    #: The git directory refs are read from (the repository's common directory).
    common_dir: Path
    #: The commit the run started from, and the last checkpoint.
    base: str
    head: str
    tree: str = ""
    #: Paths (relative to the work tree) never committed: links, the run directory.
    excluded: list[str] = field(default_factory=list)
    #: The checkout's ignored paths linked into the worktree, and the
    #: ``workspace_setup`` command (a fork's worktree runs it too).
    linked: list[str] = field(default_factory=list)
    setup: str | None = None
    max_bytes: int | None = None
    #: worktree: the repository the worktree belongs to, and the admin folder the
    #: worktree's ``.git`` file points to (rewritten when a stage deleted it).
    repo: Path | None = None
    admin: Path | None = None
    #: Warnings for the end of the run (files refused as too large, a repaired .git).
    notes: list[str] = field(default_factory=list)
    #: One git operation at a time (parallel branches share the index).
    lock: anyio.Lock = field(default_factory=anyio.Lock, repr=False, compare=False)
    #: The work tree is as ``head`` (``tree``) says and nothing has run in it since: it
    #: was just checked out (a new branch's worktree), or a stage's checkpoint was just
    #: made and only the engine ran after it. The next checkpoint has nothing to look
    #: for; whatever may change the files first clears it (engine/workspace_hooks.py).
    fresh: bool = False
    #: Nothing has run in the work tree since this process checked it out at ``head``
    #: (no stage, no ``workspace_setup``): git would find it as that commit left it.
    untouched: bool = False
    #: The run's branch begins at the checkout's HEAD itself: the checkout had nothing
    #: uncommitted, so no commit of such changes starts it. Known only to the process
    #: that made the workspace (False in a reopened one: unknown).
    started_clean: bool = False
    #: The checkout's HEAD the commit of its uncommitted changes (``base``) was made on
    #: top of, when this process made that commit (None otherwise: not known).
    start_parent: str | None = None
    #: One ``git worktree remove`` of this run's branches at a time (when a branch's
    #: worktree cannot be removed directly, see worktrees.py): git deletes the admin
    #: folder file by file, and another worktree command reading it mid-way fails
    #: ("failed to read .../commondir").
    worktrees_lock: anyio.Lock = field(default_factory=anyio.Lock, repr=False, compare=False)

    @property
    def branch(self) -> str:
        return branch_of(self.run_id)

    @property
    def ref(self) -> str:
        return "refs/heads/" + self.branch

    @property
    def git_dir(self) -> Path:
        """The workspace's own git directory (its index, HEAD, and the files above)."""
        return Path(self.git.env.get("GIT_DIR") or self.common_dir)

    def record(self) -> dict[str, Any]:
        """What the manifest keeps, to open this workspace again (:func:`reopen`)."""
        return {
            "mode": self.mode,
            "run_id": self.run_id,
            "branch": self.branch,
            "work_tree": str(self.work_tree),
            "workdir": str(self.workdir),
            "git_dir": self.git.env.get("GIT_DIR", ""),
            "common_dir": str(self.common_dir),
            "base": self.base,
            "excluded": list(self.excluded),
            "linked": list(self.linked),
            "setup": self.setup,
            "repo": str(self.repo) if self.repo else None,
            "admin": str(self.admin) if self.admin else None,
            "umask": self.git.umask,
        }

    async def tip(self) -> str:
        """The branch's commit now (a stage may have committed, or moved it)."""
        found = read_ref(self.common_dir, self.ref)  # its file, where that settles it
        if found is None and _not_a_file(self.common_dir / self.ref):
            # A FIFO (git would wait on it for ever, in a shielded checkpoint), a link:
            # not a ref a commit wrote. The branch goes back to the last checkpoint.
            os.unlink(self.common_dir / self.ref)
            await self.git.run("update-ref", self.ref, self.head)
            return self.head
        return found or await self.git.out("rev-parse", "--verify", "--quiet", self.ref)

    def _no_links_to_the_ref(self) -> None:
        """Remove a link a step put on the way to the branch's ref or its reflog (their
        folders are writable for its own commits): git would write through it, out of
        the sandbox, when it moves the branch."""
        for tree in (self.common_dir, self.common_dir / "logs"):
            path = tree
            for part in Path(self.ref).parts:
                path = path / part
                if path.is_symlink():
                    path.unlink()
                    break

    async def checkpoint(self, subject: str, trailers: Mapping[str, str | int]) -> Saved:
        """Commit the work tree when it changed since the last checkpoint; move the branch."""
        async with self.lock:
            return await self._checkpoint(subject, trailers)

    async def _checkpoint(self, subject: str, trailers: Mapping[str, str | int]) -> Saved:
        fresh, self.fresh = self.fresh, False
        if fresh and self.tree and await self.tip() == self.head:
            return Saved(self.head, self.tree)
        self._repair()
        parent = await self._parent()
        if not self.tree or parent != self.head:
            self.tree = await self.git.out("rev-parse", parent + "^{tree}")
        text = message(subject, {f"{TRAILER}-Run": self.run_id, **trailers})
        saved = await commit_work_tree(
            self.git,
            self.work_tree,
            parent,
            self.tree,
            text,
            excluded=self.excluded,
            max_bytes=self.max_bytes,
        )
        self.note_left_out(saved)
        if saved.commit != await self.tip():
            self._no_links_to_the_ref()
            await self.git.run("update-ref", "-m", subject, self.ref, saved.commit)
        self.head, self.tree = saved.commit, saved.tree
        return saved

    def note_left_out(self, saved: Saved, what: str = "the run's checkpoints") -> None:
        """Keep the files a commit left out out of later ones too, and say so."""
        if saved.refused:
            self.excluded.extend(p for p in saved.refused if p not in self.excluded)
            self.notes.append(
                f"left out of {what} (larger than "
                f"{(self.max_bytes or 0) // (1024 * 1024)} MB): " + ", ".join(saved.refused)
            )
        for path in saved.nested:
            if path not in self.excluded:
                self.excluded.append(path)
            self.notes.append(
                f"{path} is a git repository of its own (it has its own .git): its files are "
                f"not in {what} and are never restored; commit in it yourself, or remove its "
                ".git to have them checkpointed"
            )

    async def _parent(self) -> str:
        """The commit to build on: the last checkpoint, or the stage's own commits on it.

        A stage that rewrote the branch (reset, rebase) gets its commits kept
        under a lost ref; the checkpoint goes on from the run's last one.
        """
        tip = await self.tip()
        if tip == self.head:
            return tip
        if await self.git.ok("merge-base", "--is-ancestor", self.head, tip):
            return tip  # the stage committed on top: those commits stay on the branch
        name = await self.keep_lost(tip)
        self.notes.append(
            f"a stage moved the run's branch away from its checkpoints: kept as {name}"
        )
        return self.head

    async def keep_lost(self, commit: str) -> str:
        """Keep ``commit`` under the next ``refs/attractor/RUN_ID/lost/N``; its short name."""
        prefix = lost_prefix(self.run_id)
        out = await self.git.out("for-each-ref", "--format=%(refname)", prefix)
        taken = {line.removeprefix(prefix) for line in out.splitlines()}
        n = 1
        while str(n) in taken:
            n += 1
        await self.git.run("update-ref", prefix + str(n), commit)
        return (prefix + str(n)).removeprefix("refs/")

    async def restore(self, commit: str, why: str, *, keep: bool = True) -> str | None:
        """Put the work tree and the branch back to ``commit``.

        What the work tree held and the branch commits not in ``commit`` are
        kept under a lost ref first: its name is returned (None when nothing
        was there to keep, or ``keep`` is false: another ref has it).
        """
        async with self.lock:
            return await self._restore(commit, why, keep)

    async def _restore(self, commit: str, why: str, keep: bool = True) -> str | None:
        self._repair()
        tip = await self.tip()
        tree = await self.git.out("rev-parse", tip + "^{tree}")
        subject = f"attractor: the workspace before it was restored ({why})"
        now = await commit_work_tree(
            self.git,
            self.work_tree,
            tip,
            tree,
            message(subject, {f"{TRAILER}-Run": self.run_id, f"{TRAILER}-Kind": "lost"}),
            excluded=self.excluded,
            max_bytes=self.max_bytes,
        )
        self.note_left_out(now, "what the restore kept")
        kept = None
        if (
            keep
            and now.commit != commit
            and not await self.git.ok("merge-base", "--is-ancestor", now.commit, commit)
        ):
            kept = await self.keep_lost(now.commit)
        await self.move(commit, tip, now.commit, f"attractor: restore ({why})")
        return kept

    async def move(self, commit: str, tip: str, files: str, why: str) -> None:
        """Move the branch from ``tip`` and the work tree from commit ``files`` to ``commit``.

        The move is written down first and the branch moved before the files;
        a failure puts the branch and the files back (and, when even that
        fails, leaves the note for the next resume, see :meth:`was_moving`).
        """
        intent = self.git_dir / MOVING
        atomic_write_json(intent, {"to": commit, "branch_was": tip, "files_were": files})
        self._no_links_to_the_ref()
        try:
            await self.git.run("update-ref", "-m", why, self.ref, commit, tip)
        except BaseException:
            with anyio.CancelScope(shield=True):
                # A stop can land after git moved the branch and before its exit was
                # seen: the note goes only when the branch is where it was.
                code, out, _ = await self.git.run("rev-parse", "--verify", self.ref, check=False)
                if code == 0 and out.strip() == tip:
                    intent.unlink(missing_ok=True)  # nothing moved
            raise
        try:
            await self.git.run("read-tree", "-u", "--reset", commit)
        except BaseException:
            with anyio.CancelScope(shield=True):
                back = await self.git.ok("update-ref", "-m", why, self.ref, tip, commit)
                if back and await self.git.ok("read-tree", "-u", "--reset", files):
                    intent.unlink(missing_ok=True)
            raise
        intent.unlink(missing_ok=True)
        self.head = commit
        self.tree = await self.git.out("rev-parse", commit + "^{tree}")

    def was_moving(self) -> bool:
        """Whether a move of the files was cut short (its work tree is half moved)."""
        return (self.git_dir / MOVING).exists()

    def clear_stale_locks(self) -> list[str]:
        """Remove the lock files of this workspace's own index and refs that a killed git
        left (the run directory is locked: no other attractor uses them): their names."""
        locks = [self.git_dir / "index.lock", self.common_dir / (self.ref + ".lock")]
        lost = self.common_dir / lost_prefix(self.run_id)
        if lost.is_dir():
            locks += sorted(lost.glob("*.lock"))
        removed = []
        for lock in locks:
            if lock.is_file():
                lock.unlink(missing_ok=True)
                removed.append(lock.name)
        return removed

    def mark_stage(self, node: str, attempt: int) -> None:
        """Note that a stage runs in this (branch) work tree from the last checkpoint."""
        data = {"node": node, "attempt": attempt, "start": self.head}
        atomic_write_json(self.git_dir / STAGE_MARK, data, fsync=False)

    def stage_mark(self) -> dict[str, Any] | None:
        """The stage a kill caught running here (None: none, or the note is damaged)."""
        try:
            data = json.loads(read_plain(self.git_dir / STAGE_MARK))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and isinstance(data.get("start"), str) else None

    def clear_stage_mark(self) -> None:
        (self.git_dir / STAGE_MARK).unlink(missing_ok=True)

    async def apply(self, commit: str) -> bool:
        """Apply what ``commit`` changed to the work tree (all or nothing): whether it did."""
        async with self.lock:
            _, patch, _ = await self.git.run("diff-tree", "-p", "--binary", commit + "^", commit)
            data = patch.encode("utf-8", "surrogateescape")
            code, _, _ = await self.git.run("apply", "--index", input=data, check=False)
            return code == 0

    def _repair(self) -> None:
        """Put back a worktree's ``.git`` file a stage deleted (the agent's git needs it)."""
        if self.admin is None:
            return
        dot_git = self.work_tree / ".git"
        if not os.path.lexists(dot_git):
            try:
                dot_git.write_text(f"gitdir: {self.admin}\n")
            except OSError as exc:
                raise WorkspaceError(f"cannot restore {dot_git}: {exc.strerror or exc}") from None
            self.notes.append(f"a stage deleted {dot_git}; it was written again")


def _not_a_file(path: Path) -> bool:
    """Whether something other than a regular file is there (nothing there: False)."""
    try:
        return not stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def reopen(record: Mapping[str, Any], max_bytes: int | None = None) -> Workspace:
    """The workspace a manifest recorded (:meth:`Workspace.record`).

    Raises:
        WorkspaceError: the record is damaged, or its work tree is gone.
    """
    try:
        work_tree = Path(str(record["work_tree"]))
        env = {"GIT_DIR": str(record["git_dir"]), "GIT_WORK_TREE": str(work_tree)}
        workspace = Workspace(
            mode=str(record["mode"]),
            run_id=str(record["run_id"]),
            git=Git(work_tree, env, int(record.get("umask", -1))),
            work_tree=work_tree,
            workdir=Path(str(record["workdir"])),
            common_dir=Path(str(record["common_dir"])),
            base=str(record["base"]),
            head="",
            excluded=[str(p) for p in record.get("excluded", [])],
            linked=[str(p) for p in record.get("linked", [])],
            setup=str(record["setup"]) if record.get("setup") else None,
            max_bytes=max_bytes,
            repo=Path(str(record["repo"])) if record.get("repo") else None,
            admin=Path(str(record["admin"])) if record.get("admin") else None,
        )
    except (KeyError, TypeError, ValueError):
        raise WorkspaceError(
            "the run's manifest has a damaged workspace record; "
            "resume with --workspace none, or start a new run"
        ) from None
    if not Path(env["GIT_DIR"]).is_dir():
        raise WorkspaceError(
            f"the run's git directory {env['GIT_DIR']} is gone, and with it the checkpoints "
            "of its files: resume with --workspace none, or start a new run"
        )
    if not work_tree.is_dir():
        work_tree.mkdir(parents=True)  # the files come back from the checkpoint
    return workspace
