"""The hooks in .pre-commit-hooks.yaml run as pre-commit would run them.

pre-commit runs ``entry`` with the staged files that match ``files`` appended.
The file is plain ``key: value`` YAML, read here without a YAML library.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "examples" / "linear.dot"
BAD = ROOT / "examples" / "invalid" / "shape_known.dot"
WARNING_ONLY = ROOT / "examples" / "invalid" / "duplicate_edge_label.dot"


def _hooks() -> dict[str, dict[str, str]]:
    hooks: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in (ROOT / ".pre-commit-hooks.yaml").read_text("utf-8").splitlines():
        match = re.match(r"^(- |  )(\w+): (.*)$", line)
        if match is None:
            continue
        if match.group(1) == "- ":
            current = {}
        current[match.group(2)] = match.group(3)
        if match.group(2) == "id":
            hooks[match.group(3)] = current
    return hooks


def _run(entry: str, *files: Path) -> int:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    args = [*shlex.split(entry), *map(str, files)]
    return subprocess.run(args, env=env, capture_output=True, timeout=60, check=False).returncode


def test_hooks_lint_dot_files_and_fail_on_errors() -> None:
    hooks = _hooks()
    assert set(hooks) == {"attractor-lint", "attractor-lint-strict"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        pattern = re.compile(hook["files"])  # a plain YAML scalar: no escapes
        assert pattern.search("pipelines/ci.dot") and not pattern.search("dot.py")
        assert _run(hook["entry"], GOOD) == 0
        assert _run(hook["entry"], GOOD, BAD) == 1
    assert _run(hooks["attractor-lint"]["entry"], WARNING_ONLY) == 0
    assert _run(hooks["attractor-lint-strict"]["entry"], WARNING_ONLY) == 1
