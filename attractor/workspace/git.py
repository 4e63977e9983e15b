"""Running ``git``: one helper every workspace operation goes through.

Each call is a real ``git`` subprocess (:func:`~attractor.proc.capture.captured`:
in a session of its own; cancelled with its caller, the command and all it started
are killed and the command reaped; stdin is empty
unless the call gives it some). The environment is the caller's
minus the variables that would point git at another repository, plus a
fixed identity for the commits the run makes, so a user's ``GIT_DIR`` or a
missing ``user.email`` changes nothing. A failure is a
:class:`~attractor.errors.WorkspaceError` naming the command and what git said.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path

from attractor.errors import WorkspaceError
from attractor.proc.capture import captured
from attractor.valueclass import frozen

#: Who the run's commits are by (the user's own commits keep the user's name).
IDENTITY = {
    "GIT_AUTHOR_NAME": "attractor",
    "GIT_AUTHOR_EMAIL": "attractor@localhost",
    "GIT_COMMITTER_NAME": "attractor",
    "GIT_COMMITTER_EMAIL": "attractor@localhost",
}
#: Variables that would make git use another repository, index or work tree than asked.
_REPOSITORY_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
)


def git_path() -> str | None:
    """The ``git`` executable on PATH, None when there is none."""
    return shutil.which("git")


def base_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARIABLES}
    env.update(IDENTITY)
    # Never ask a person for anything (a credential, an editor) from inside a run.
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_EDITOR"] = "true"
    env["LC_ALL"] = "C"
    return env


@frozen
class Git:
    """``git`` for one repository: run from ``cwd``, with ``env`` added to the environment.

    A snapshot workspace passes ``GIT_DIR``/``GIT_WORK_TREE``/``GIT_INDEX_FILE``
    here; a worktree only its folder.
    """

    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)
    #: The umask git runs with (-1: this process's); 0o077 keeps a private run's files private.
    umask: int = -1

    def with_env(self, **extra: str) -> Git:
        return Git(self.cwd, {**self.env, **extra}, self.umask)

    async def run(
        self, *args: str, input: bytes | None = None, check: bool = True
    ) -> tuple[int, str, str]:
        """Run ``git ARGS``: (exit status, stdout, stderr), raising on failure with ``check``."""
        exe = git_path()
        if exe is None:
            raise WorkspaceError("git is not installed: install git, or pass --workspace none")
        env = {**base_environment(), **self.env}
        try:
            code, raw_out, raw_err = await captured(
                [exe, *args], input=input, cwd=self.cwd, env=env, umask=self.umask
            )
        except OSError as exc:
            name = " ".join(_subcommand(args)[:1])
            raise WorkspaceError(
                f"cannot run git {name}: {exc.strerror or exc}", "git " + name
            ) from None
        out = raw_out.decode("utf-8", "surrogateescape")
        err = raw_err.decode("utf-8", "surrogateescape")
        if check and code != 0:
            raise failure(args, err or out)
        return code, out, err

    async def out(self, *args: str, input: bytes | None = None) -> str:
        """The stdout of ``git ARGS`` without its final newline."""
        return (await self.run(*args, input=input))[1].rstrip("\n")

    async def ok(self, *args: str) -> bool:
        """Whether ``git ARGS`` succeeds."""
        return (await self.run(*args, check=False))[0] == 0


def failure(args: Sequence[str], said: str) -> WorkspaceError:
    """The error of a failed git command, with what git said in one line."""
    lines = [line.strip() for line in said.strip().splitlines() if line.strip()]
    detail = lines[-1] if lines else "no message"
    for line in lines:  # the fatal/error line says most
        if line.startswith(("fatal:", "error:")):
            detail = line
            break
    command = "git " + " ".join(_subcommand(args)[:2])
    hint = _hint(said)
    return WorkspaceError(f"{command} failed: {detail}{hint}", command, said.strip())


def _subcommand(args: Sequence[str]) -> list[str]:
    """``args`` from the subcommand on: without git's own options (``-c KEY=VALUE``, ``-C DIR``)."""
    words = list(args)
    while words and words[0] in ("-c", "-C"):
        words = words[2:]
    while words and words[0].startswith("--") and "=" in words[0]:
        words = words[1:]
    return words


def _hint(said: str) -> str:
    if ".lock" in said and "exists" in said:
        return (
            " (another git process holds the lock; once it is gone, or the stale "
            ".lock file removed, resume the run)"
        )
    if "No space left" in said or "ENOSPC" in said:
        return " (the disk is full; free some space, then resume the run)"
    return ""
