"""What the engine tells a session of the work tree it starts in (a light module: the
engine names it for every stage without loading the session's machinery)."""

from __future__ import annotations

from pathlib import Path

from attractor.valueclass import frozen


@frozen
class Checkout:
    """A work tree checked out at ``commit`` on ``branch`` (``top``: its top folder) that
    nothing has run in since, as the engine knows it (a parallel branch's new worktree).

    Its git facts are those of any such work tree of the same commit but for its own
    folder and branch: the sessions of a fan-out's branches, starting together each
    in a worktree of its own, share one look (a sandbox, a shell and four git
    commands a session were most of a fan-out's start in a repository; see
    :func:`attractor.agent.project_context.git_state`).
    """

    top: Path
    branch: str
    commit: str
