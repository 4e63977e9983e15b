"""What the agent is told about where it works: environment, git state, project instructions.

Gathered once when a session starts. The git facts come from ``git`` itself
(run as a subprocess with a short time limit); outside a repository, or without
git, the block simply says so. Instruction files are read from the repository
root (or the working directory outside a repository) down to the working
directory: AGENTS.md everywhere, plus the profile's own file names, deeper files
last so they take precedence, within :data:`INSTRUCTIONS_BUDGET` bytes.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shlex
import threading
from collections.abc import Awaitable, Callable
from dataclasses import field
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import anyio.to_thread

from attractor.agent.checkout import Checkout
from attractor.proc.environment import ExecutionEnvironment as Runner
from attractor.proc.hostfs.beneath import Beneath
from attractor.proc.hostfs.fdio import read_all, regular
from attractor.proc.process import run_process
from attractor.valueclass import frozen

INSTRUCTIONS_BUDGET = 32 * 1024
TRUNCATED_MARK = "[project instructions truncated at 32 KiB]"
GIT_TIMEOUT = 5.0
RECENT_COMMITS = 8
T = TypeVar("T")
STATUS_LINES = 20


@frozen
class InstructionFile:
    """One instruction file read into the prompt: where, and how many bytes were used."""

    path: Path
    bytes_used: int
    truncated: bool = False

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "bytes": self.bytes_used, "truncated": self.truncated}


@frozen
class ProjectContext:
    """The environment block and the project instructions for the system prompt."""

    environment: str
    instructions: str = ""
    files: tuple[InstructionFile, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, object]:
        return {"instruction_files": [f.to_json() for f in self.files]}


#: What a session is told of git, asked in turn by one shell: the repository's top
#: folder (none: not a repository, nothing more is asked), branch, status, commits.
_QUESTIONS = (
    ("rev-parse", "--show-toplevel"),
    ("rev-parse", "--abbrev-ref", "HEAD"),
    ("status", "--short"),
    ("log", "--oneline", f"-{RECENT_COMMITS}"),
)
#: Printed after each answer with git's exit status (control characters in paths
#: and branch names are quoted by git; a commit subject would need the whole mark).
_MARK = re.compile("\x1eattractor-git ([0-9]+)\x1e")


def _script() -> str:
    lines = []
    for n, question in enumerate(_QUESTIONS):
        git = shlex.join(["git", "--no-optional-locks", *question])
        stop = "; [ $s -eq 0 ] || exit 0" if n == 0 else ""
        lines.append(f"{git}; s=$?; printf '\\036attractor-git %d\\036' $s{stop}")
    return "\n".join(lines) + "\n"


async def _ask_git(workdir: Path, runner: Runner | None) -> list[str | None]:
    """Each question's answer (None: git failed it, or is missing), from one shell.

    Through the step's execution environment when there is one: a repository's
    own config can make git run commands (``core.fsmonitor``, filters, a gpg
    program), and a command an earlier step wrote there stays inside its boundary.
    One shell, not one a question: in a sandbox each command is a sandbox started.
    """
    script = _script()
    try:
        if runner is not None:
            result = await runner.run(script, cwd=workdir, timeout=GIT_TIMEOUT, kill_grace=0.5)
        else:
            result = await run_process(script, cwd=workdir, timeout=GIT_TIMEOUT, kill_grace=0.5)
    except OSError:
        return [None] * len(_QUESTIONS)
    parts = _MARK.split(result.stdout)
    answers: list[str | None] = [
        text.rstrip() if code == "0" else None
        for text, code in zip(parts[0::2], parts[1::2], strict=False)
    ]
    return answers + [None] * (len(_QUESTIONS) - len(answers))


@frozen
class GitState:
    root: Path
    branch: str
    status: str
    commits: str


class _Shared:
    """One look in progress, which sessions starting meanwhile wait for."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.finished = False
        self.value: Any = None


#: Looks in progress (git state, instruction files), by kind, thread, workdir and
#: boundary. Sessions that start together in one place (the branches of a fan-out)
#: share one look: four git subprocesses and a worker thread a session were most
#: of a model stage's own CPU.
_RUNNING: dict[tuple[str, ...], _Shared] = {}


async def _together(key: tuple[str, ...], look: Callable[[], Awaitable[T]]) -> T:
    """``look()``, or the answer of the same look already running (the same moment's).

    If that look fails or is cancelled, this one looks itself.
    """
    key = (*key, str(threading.get_ident()))
    shared = _RUNNING.get(key)
    if shared is not None:
        await shared.done.wait()
        if shared.finished:
            return cast("T", shared.value)
        return await look()
    shared = _RUNNING[key] = _Shared()
    try:
        shared.value = await look()
        shared.finished = True
    finally:
        del _RUNNING[key]
        shared.done.set()
    return cast("T", shared.value)


async def git_state(
    workdir: Path, runner: Runner | None = None, checkout: Checkout | None = None
) -> GitState | None:
    """Branch, short status and recent commits, or None outside a repository.

    A call made while another for the same workdir and boundary is running gets
    that call's answer (see :func:`_together`); with ``checkout``, one for the same
    place in an untouched work tree of the same commit (see :class:`Checkout`).
    """
    if _no_repository(workdir):
        return None  # what git would say, without starting a (sandboxed) shell for it
    where = "" if runner is None else f"{type(runner).__name__}: {runner.describe()}"
    if checkout is None or not workdir.is_relative_to(checkout.top):
        return await _together(("git", str(workdir), where), lambda: _git_state(workdir, runner))
    # The status names paths from the workdir: the same place in each work tree.
    place = workdir.relative_to(checkout.top).as_posix()
    key = ("git-checkout", checkout.commit, place, where)
    found = await _together(key, lambda: _git_state(workdir, runner))
    if found is None:
        return None
    return GitState(checkout.top, checkout.branch, found.status, found.commits)


#: Variables that tell git where a repository is, or where to stop looking for one.
_GIT_PLACES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)


def _no_repository(workdir: Path) -> bool:
    """True when git can find no repository from ``workdir``: no ``.git`` in it or in
    any folder above it, none of them a bare repository, and no variable pointing git
    elsewhere. A few ``lstat`` calls instead of a shell (about 15 ms in a sandbox, on
    the way of every session that starts outside a repository); False whenever unsure."""
    if any(name in os.environ for name in _GIT_PLACES):
        return False
    # Plain strings, not Path objects: this runs for every session that starts (64 at
    # once in a fan-out, one after the other), and each Path join costs microseconds.
    try:
        folder = os.path.realpath(workdir)
        while True:
            if _exists(f"{folder}/.git") or all(
                _exists(f"{folder}/{name}") for name in ("HEAD", "objects", "refs")
            ):
                return False
            parent = os.path.dirname(folder)
            if parent == folder:
                return True
            folder = parent
    except OSError:  # a folder it may not look into: git decides
        return False


def _exists(path: str) -> bool:
    """Whether ``path`` is there, whatever it is (raises when it cannot be told)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    return True


async def _git_state(workdir: Path, runner: Runner | None) -> GitState | None:
    top, branch, status, commits = await _ask_git(workdir, runner)
    if not top:
        return None
    return GitState(Path(top), branch or "(unknown)", status or "", commits or "")


def _status_summary(status: str) -> str:
    lines = status.splitlines()
    if not lines:
        return "clean"
    modified = sum(1 for line in lines if not line.startswith("??"))
    untracked = len(lines) - modified
    shown = "\n".join(lines[:STATUS_LINES])
    more = f"\n... and {len(lines) - STATUS_LINES} more" if len(lines) > STATUS_LINES else ""
    return f"{modified} changed, {untracked} untracked\n{shown}{more}"


def environment_block(
    workdir: Path, git: GitState | None, *, model: str = "", today: datetime.date | None = None
) -> str:
    """The ``<environment>`` block of the system prompt."""
    day = (today or datetime.date.today()).isoformat()
    lines = [
        "<environment>",
        f"Working directory: {workdir}",
        f"Platform: {platform.system().lower()} ({platform.release()})",
        f"Today's date: {day}",
    ]
    if model:
        lines.append(f"Model: {model}")
    lines.append(f"Is git repository: {'true' if git else 'false'}")
    if git is not None:
        lines.append(f"Git branch: {git.branch}")
        lines.append(f"Git status: {_status_summary(git.status)}")
        if git.commits:
            lines.append(f"Recent commits:\n{git.commits}")
    lines.append("</environment>")
    return "\n".join(lines)


def _chain(workdir: Path, root: Path) -> list[Path]:
    """Directories from ``root`` down to ``workdir`` (just ``workdir`` if it is not below)."""
    workdir, root = workdir.resolve(), root.resolve()
    try:
        relative = workdir.relative_to(root)
    except ValueError:
        return [workdir]
    chain = [root]
    for part in relative.parts:
        chain.append(chain[-1] / part)
    return chain


def _read_bounded(directory: Path, name: str, limit: int) -> bytes | None:
    """At most ``limit + 1`` bytes of ``directory/name`` if it is a regular file inside."""
    try:
        with Beneath(directory) as beneath, beneath.open(name) as found:
            regular(found.value, name)
            data = read_all(found.value, 16 * INSTRUCTIONS_BUDGET)
    except Exception:  # missing, a directory, unreadable, escaping: not an instruction file
        return None
    return None if data is None else data[: limit + 1]


def discover_instructions(
    workdir: Path, root: Path | None, names: tuple[str, ...]
) -> tuple[str, tuple[InstructionFile, ...]]:
    """The text of the instruction files from ``root`` down to ``workdir``, within budget."""
    wanted = ("AGENTS.md", *(n for n in names if n != "AGENTS.md"))
    budget = INSTRUCTIONS_BUDGET
    parts: list[str] = []
    files: list[InstructionFile] = []
    for directory in _chain(workdir, root or workdir):
        for name in wanted:
            if budget <= 0:
                break
            data = _read_bounded(directory, name, budget)
            if data is None:
                continue
            truncated = len(data) > budget
            used = data[:budget]
            budget -= len(used)
            text = used.decode("utf-8", errors="ignore")
            parts.append(f"<instructions file={str(directory / name)!r}>\n{text}")
            parts[-1] += (
                f"\n{TRUNCATED_MARK}\n</instructions>" if truncated else "\n</instructions>"
            )
            files.append(InstructionFile(directory / name, len(used), truncated))
    return "\n\n".join(parts), tuple(files)


async def gather(
    workdir: Path,
    instruction_files: tuple[str, ...],
    *,
    model: str = "",
    runner: Runner | None = None,
    checkout: Checkout | None = None,
) -> ProjectContext:
    """The project context of a session starting in ``workdir`` (git runs through
    ``runner``, the step's execution environment, when given; ``checkout``: the work
    tree is one the engine just checked out, see :class:`Checkout`)."""
    git = await git_state(workdir, runner, checkout)
    root = git.root if git else None

    async def look() -> tuple[str, tuple[InstructionFile, ...]]:
        return await anyio.to_thread.run_sync(
            discover_instructions, workdir, root, instruction_files
        )

    key = ("instructions", str(workdir), str(root), *instruction_files)
    text, files = await _together(key, look)
    return ProjectContext(environment_block(workdir, git, model=model), text, files)
