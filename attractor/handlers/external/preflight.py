"""Before a run starts: is each agent CLI a node needs installed and logged in?

Both failures are a :class:`~attractor.errors.UsageError` (exit 2) naming the
node, the backend and what to do, raised before any node runs. Like a provider
adapter, this module reads the environment: the CLIs' own credential variables.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from attractor.errors import UsageError
from attractor.handlers.external.spec import AgentCli

#: Longest wait for a CLI's own login check (a cold Node start takes a second or two).
STATUS_TIMEOUT = 60.0


def check_cli(cli: AgentCli, node_id: str, env: Mapping[str, str] | None = None) -> str:
    """The CLI's full path once it is found and logged in.

    Raises:
        UsageError: the executable is not on PATH, or the CLI is not logged in.
    """
    env = os.environ if env is None else env
    path = shutil.which(cli.executable, path=env.get("PATH"))
    if path is None:
        raise UsageError(
            f"node {node_id}: backend {cli.name} needs the `{cli.executable}` executable, "
            f"which is not on PATH; install it with `npm install -g {cli.package}`"
        )
    problem = _login_problem(cli, path, env)
    if problem is not None:
        raise UsageError(
            f"node {node_id}: backend {cli.name} is not logged in ({problem}); {cli.login_hint}"
        )
    return path


def _login_problem(cli: AgentCli, path: str, env: Mapping[str, str]) -> str | None:
    """None when logged in, else what the check found."""
    if any(env.get(name) for name in cli.credential_env):
        return None
    home = env.get("HOME")
    if cli.login_file is not None and home and cli.login_file(Path(home)):
        return None
    if not cli.status_command:
        names = ", ".join(cli.credential_env)
        return f"none of {names} is set and no login is recorded"
    return _status_problem(cli, path, env)


def _status_problem(cli: AgentCli, path: str, env: Mapping[str, str]) -> str | None:
    command = " ".join([cli.executable, *cli.status_command])
    try:
        done = subprocess.run(
            [path, *cli.status_command],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=dict(env),
            timeout=STATUS_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"`{command}` did not answer within {STATUS_TIMEOUT:g}s"
    except OSError as exc:
        return f"`{command}` could not start: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    said = _last_line(done.stdout) or _last_line(done.stderr) or f"exit {done.returncode}"
    return f"`{command}` says: {said}"


def _last_line(data: bytes) -> str:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line and not line.startswith("WARNING:")]
    return lines[-1][:200] if lines else ""
