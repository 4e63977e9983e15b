"""``attractor lsp`` as a command: pygls stays out of every other command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.lsp.lspkit import ROOT


def _python(code: str, *, path: str = str(ROOT)) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )


def test_lint_and_import_attractor_never_load_pygls(tmp_path: Path) -> None:
    pipeline = tmp_path / "p.dot"
    pipeline.write_text("digraph p { start [shape=Mdiamond] }\n", encoding="utf-8")
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "import attractor\n"
        "from attractor.cli.main import cli\n"
        f"CliRunner().invoke(cli, ['lint', {str(pipeline)!r}])\n"
        "print(sorted(m for m in ('pygls', 'lsprotocol', 'attractor.lsp') if m in sys.modules))\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_pygls_the_command_says_which_extra_to_install(tmp_path: Path) -> None:
    # A pygls that cannot be imported, found before the installed one.
    (tmp_path / "pygls").mkdir()
    (tmp_path / "pygls" / "__init__.py").write_text(
        "raise ImportError('No module named pygls')\n", encoding="utf-8"
    )
    done = _python(
        "import sys; sys.argv = ['attractor', 'lsp']\nfrom attractor.cli.main import main\nmain()",
        path=f"{tmp_path}{os.pathsep}{ROOT}",
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: attractor lsp needs pygls (No module named pygls); "
        "install it with: pip install 'attractor[lsp]'"
    ]
