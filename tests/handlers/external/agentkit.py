"""Fake agent CLIs on PATH, and pipelines that run them through ``attractor run``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

FAKE = Path(__file__).with_name("fake_agent.py")
#: backend name -> executable name.
EXECUTABLES = {"claude-code": "claude", "codex": "codex", "gemini-cli": "gemini"}
#: Credentials the CLIs read themselves; never leak a developer's into a test.
CLI_CREDENTIALS = (
    "CODEX_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
)


def install_fakes(bin_dir: Path, names: tuple[str, ...] = ("claude", "codex", "gemini")) -> Path:
    """Put an executable fake for each CLI name into ``bin_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = bin_dir / name
        path.write_text(
            f"#!{sys.executable}\n"
            "import runpy\n"
            f"runpy.run_path({str(FAKE)!r}, {{'AS': {name!r}}}, run_name='__main__')\n",
            encoding="utf-8",
        )
        path.chmod(0o755)
    return bin_dir


def agent_env(bin_dir: Path, log: Path, **extra: str | None) -> dict[str, Any]:
    """The environment of a run that finds the fakes first on PATH and logs their starts."""
    env: dict[str, Any] = dict.fromkeys(CLI_CREDENTIALS)
    env.update(
        {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "FAKE_AGENT_LOG": str(log),
            # the fake CLI reads its own settings, as a user hands a tool node a variable
            "ATTRACTOR_ENV_ALLOW": "FAKE_AGENT_*",
            "GEMINI_API_KEY": "fake-key",  # gemini has no status command to answer
        }
    )
    env.update(extra)
    return env


def starts(log: Path) -> list[dict[str, Any]]:
    """Each start of a fake CLI (argv, cwd, pid, prompt), in order."""
    if not log.exists():
        return []
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [entry for entry in entries if "argv" in entry]


def child_pids(log: Path) -> list[int]:
    """Children the fakes started before hanging."""
    if not log.exists():
        return []
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [entry["child_pid"] for entry in entries if "child_pid" in entry]


def one_node_graph(backend: str, prompt: str, *, graph_name: str = "agent", **attrs: str) -> str:
    """start -> work -> done, where ``work`` runs ``backend`` with ``prompt``."""
    extra = "".join(f', {key}="{value}"' for key, value in attrs.items())
    return f"""digraph {graph_name} {{
        start [shape=Mdiamond]
        done  [shape=Msquare]
        work  [shape=box, backend="{backend}", prompt="{prompt}"{extra}]
        start -> work -> done
    }}"""
