"""The objects a process held before its first run are out of the collector's walks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import gc, sys
from pathlib import Path

import anyio

from attractor.engine.run import RunOptions, prepare_run_graph, run_pipeline
from attractor.handlers.simulate import SimulateBackend
from attractor.settings import resolve_settings

source = Path(sys.argv[1])
if sys.argv[3] != "-":  # the host's own threshold for young collections
    gc.set_threshold(int(sys.argv[3]), 10, 10)
before = gc.get_freeze_count()
counts, graphs = [], []
for n in range(2):
    graph = prepare_run_graph(source)
    graphs.append(graph)  # kept: a second freeze would take the second one in
    settings = resolve_settings({"logs_dir": f"{sys.argv[2]}/{n}"}, graph_attrs=graph.attrs)
    options = RunOptions(settings, backend=SimulateBackend())
    result = anyio.run(run_pipeline, graph, source, options)
    counts.append(gc.get_freeze_count())

class Loop:
    pass

made = Loop()
made.me = made  # garbage only the collector can free, made after the runs
del made
once = counts[0] > 0 and counts[1] <= counts[0]
print(result.status, before, once, gc.isenabled(), gc.collect() > 0, gc.get_threshold()[0])
"""


@pytest.mark.parametrize(
    ("host", "young"),
    [("-", 5000), ("9000", 9000), ("0", 0)],
    ids=["python-default", "host-higher", "host-off"],
)
def test_the_first_run_sets_aside_what_exists_and_later_garbage_is_still_collected(
    tmp_path: Path, host: str, young: int
) -> None:
    source = tmp_path / "p.dot"
    source.write_text(
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; a; start -> a -> done }"
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(source), str(tmp_path / "runs"), host],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Frozen at the first run only (a second freeze would add what the first left;
    # frozen objects freed since only lower the count),
    # and the collector still runs for what came after, 5,000 new objects apart
    # unless the host chose more, or none.
    assert done.stdout.strip() == f"success 0 True True True {young}", done.stderr
