"""A run that handles stop signals leaves the process's handlers as it found them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import signal, sys
from pathlib import Path

import anyio

from attractor.engine.run import RunOptions, prepare_run_graph, run_pipeline
from attractor.handlers.simulate import SimulateBackend
from attractor.settings import resolve_settings

def mine(signum, frame):
    pass

stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
for signum in stops:
    signal.signal(signum, mine)
source = Path(sys.argv[1])
graph = prepare_run_graph(source)
settings = resolve_settings({"logs_dir": sys.argv[2]}, graph_attrs=graph.attrs)
options = RunOptions(settings, backend=SimulateBackend(), handle_signals=True)
result = anyio.run(run_pipeline, graph, source, options)
print(result.status, [signal.getsignal(signum) is mine for signum in stops])
"""


def test_the_handlers_in_place_before_a_run_are_in_place_after_it(tmp_path: Path) -> None:
    # asyncio puts the defaults back when a run's signal receiver closes: SIGTERM and
    # SIGHUP would then kill the process while the run is still being closed.
    source = tmp_path / "p.dot"
    source.write_text(
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; a; start -> a -> done }"
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(source), str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "success [True, True, True]", done.stderr
