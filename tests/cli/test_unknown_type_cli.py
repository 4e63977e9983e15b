"""An unknown ``type=`` is an error from the command line, which can register no handler.

Before, lint passed it as a warning and every run failed at that node. The
library, where a program may register a handler for the type, keeps it a
warning.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.runkit import invoke, write

PIPELINE = """digraph p {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    deploy [type="deploy"]
    start -> deploy -> exit
}
"""
MESSAGE = (
    "error type_known: type=deploy is not a known handler type; no handler can be "
    "registered for it from the command line, so the node would fail every time it runs"
)


def test_lint_reports_an_unknown_type_as_an_error(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE)
    result = invoke(["lint", "p.dot"])
    assert result.exit_code == 1, result.stdout
    assert f"p.dot:4:13: {MESSAGE}" in result.stdout


def test_run_refuses_an_unknown_type_before_anything_runs(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert result.exit_code == 2, result.output
    assert MESSAGE in result.stdout + result.stderr
    assert not (workspace / "runs").exists()
    dry = invoke(["run", "p.dot", "--dry-run"])
    assert dry.exit_code == 2 and MESSAGE in dry.stdout + dry.stderr


def test_the_library_warns_and_runs_a_type_registered_by_code(tmp_path: Path) -> None:
    source = write(tmp_path / "p.dot", PIPELINE)
    program = write(
        tmp_path / "deploy.py",
        """
import sys
from pathlib import Path

import anyio

import attractor
from attractor.engine.run import RunOptions, prepare_run_graph, run_pipeline
from attractor.handlers.builtin import default_registry
from attractor.handlers.outcome import Outcome
from attractor.handlers.simulate import SimulateBackend
from attractor.settings import resolve_settings

source = Path(sys.argv[1])
print([d.severity for d in attractor.lint(source) if d.rule == "type_known"])


class Deploy:
    async def execute(self, node, context, graph, env):
        return Outcome.success("deployed")


registry = default_registry()
registry.register("deploy", Deploy())
graph = prepare_run_graph(source)
settings = resolve_settings({"logs_dir": sys.argv[2]}, graph_attrs=graph.attrs)
options = RunOptions(settings, registry=registry, backend=SimulateBackend())
result = anyio.run(run_pipeline, graph, source, options)
print(result.status)
""",
    )
    done = subprocess.run(
        [sys.executable, str(program), str(source), str(tmp_path / "run")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['warning']", "success"]
