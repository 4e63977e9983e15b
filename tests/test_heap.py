"""The collector and a run: what the process held before its first run is out of the
collector's walks, and a pause holds collections back while the loop is busy."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from attractor import heap

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


@pytest.fixture
def collector_on() -> Iterator[None]:
    """The collector on at the start, and as it was found at the end."""
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def _busy(seconds: float) -> None:
    """Keep the event loop's thread busy (as a burst of task steps does)."""
    ends = time.perf_counter() + seconds
    while time.perf_counter() < ends:
        pass


async def _watched(pause: heap.Pause, limit: float = 5.0) -> None:
    """Wait (at most ``limit`` seconds) for ``pause``'s watch to end it."""
    with anyio.fail_after(limit):
        await pause.watch()


@pytest.mark.anyio
async def test_a_pause_holds_while_the_loop_is_busy_and_ends_once_it_idles(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(heap, "QUIET_TICKS", 1)  # one tick on time is enough
    pause = heap.Pause()
    assert not gc.isenabled()
    async with anyio.create_task_group() as group:
        group.start_soon(_watched, pause)
        await anyio.lowlevel.checkpoint()  # the watch starts its first tick
        _busy(0.05)  # a burst: the loop runs nothing else meanwhile
        for _ in range(5):  # turns of the loop: the watch wakes, some 49 ms late
            await anyio.lowlevel.checkpoint()
        assert not gc.isenabled()  # a tick that came late is not an idle one
    # Then a tick on time ended it, with no end() called.
    assert gc.isenabled()


@pytest.mark.anyio
async def test_a_pause_ends_with_end_or_cancellation_even_if_never_idle(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(heap, "SLACK", 0.0)  # no tick counts as idle
    monkeypatch.setattr(heap, "LONGEST", 60.0)
    pause = heap.Pause()
    pause.end()
    pause.end()  # twice: still one release
    assert gc.isenabled()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            pause = heap.Pause()
            group.start_soon(pause.watch)
            await anyio.lowlevel.checkpoint()
            pause.end()  # cancels the watch: the group does not wait for an idle loop
            assert gc.isenabled()
    with anyio.move_on_after(0.01):
        async with anyio.create_task_group() as group:
            pause = heap.Pause()
            group.start_soon(pause.watch)
            await anyio.sleep_forever()
    assert gc.isenabled()


@pytest.mark.anyio
async def test_nested_pauses_resume_after_the_last_and_leave_a_stopped_collector_stopped(
    collector_on: None,
) -> None:
    outer = heap.Pause()
    inner = heap.Pause()
    inner.end()
    assert not gc.isenabled()  # the outer pause still holds
    outer.end()
    assert gc.isenabled()
    gc.disable()  # the host stopped it: no pause may start it again
    pause = heap.Pause()
    await _watched(pause)
    assert not gc.isenabled()


@pytest.mark.anyio
async def test_a_pause_ends_at_its_cap_of_new_objects_even_while_busy(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(heap, "CAP", 2000)
    monkeypatch.setattr(heap, "SLACK", 0.0)  # no tick counts as idle
    pause = heap.Pause()
    kept = [[n] for n in range(heap.CAP * 2)]  # new objects the collector tracks
    await _watched(pause)
    assert gc.isenabled() and len(kept) == heap.CAP * 2


@pytest.mark.anyio
async def test_a_pause_ends_after_its_longest_even_if_never_idle(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(heap, "LONGEST", 0.02)
    monkeypatch.setattr(heap, "SLACK", 0.0)
    pause = heap.Pause()
    await _watched(pause)
    assert gc.isenabled()
