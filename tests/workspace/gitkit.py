"""Real git repositories in tmp dirs for the workspace tests (no mocked git)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

#: A fixed identity, so the tests do not depend on the machine's git config.
_ENV = {
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "user@example.com",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "user@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str, check: bool = True) -> str:
    """``git ARGS`` in ``repo``: its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_ENV)
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False, timeout=60
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository at ``path`` with one commit of ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "hello\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    return path


def state_of(repo: Path) -> dict[str, object]:
    """What the user would notice of their checkout: files, index, stash, branches, HEAD."""
    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file()
        and ".git" not in p.relative_to(repo).parts
        and ".attractor" not in p.relative_to(repo).parts
    }
    return {
        "files": files,
        "index": (repo / ".git" / "index").read_bytes(),
        "status": git(repo, "status", "--porcelain"),
        "stash": git(repo, "stash", "list"),
        "head": git(repo, "rev-parse", "HEAD"),
        "branch": git(repo, "symbolic-ref", "HEAD"),
    }


def trailers(repo: Path, commit: str) -> dict[str, str]:
    out = git(repo, "log", "-1", "--format=%(trailers:only,unfold)", commit)
    pairs = [line.split(": ", 1) for line in out.splitlines() if ": " in line]
    return dict(pairs)


def age_run(run_dir: Path, days: float) -> None:
    """Date the run's manifest back ``days``, as a run left long ago reads."""
    manifest = run_dir / "manifest.json"
    data = json.loads(manifest.read_text())
    for key in ("started_at", "finished_at"):
        if data.get(key) is not None:
            data[key] -= days * 86400
    manifest.write_text(json.dumps(data))


def git_commands(trace: Path) -> list[list[str]]:
    """The argument lists of the git commands a GIT_TRACE2_EVENT file saw started."""
    found = []
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "start":
            found.append(event["argv"][1:])
    return found
