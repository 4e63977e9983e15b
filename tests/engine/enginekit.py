"""Helpers for engine tests: build graphs from DOT text and run them in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot
from attractor.dot.transforms import apply_transforms
from attractor.engine.retry import BackoffConfig
from attractor.engine.run import RunOptions, RunResult, resume_pipeline, run_pipeline
from attractor.events import Event
from attractor.handlers.simulate import SimulateBackend
from attractor.settings import Settings

NO_WAIT = BackoffConfig(0.0, 1.0, 0.0, jitter=False)


def graph_of(body: str, name: str = "t", attrs: str = "") -> Graph:
    """A graph from DOT statements, with ``start``/``done`` nodes declared for you."""
    text = (
        f"digraph {name} {{\n{attrs}\n"
        "  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f"{body}\n}}\n"
    )
    return apply_transforms(parse_dot(text, file="t.dot"))


def options(tmp_path: Path, **kwargs: Any) -> RunOptions:
    settings_kw = {
        k: kwargs.pop(k)
        for k in list(kwargs)
        if k in Settings.__dataclass_fields__ and k not in RunOptions.__dataclass_fields__
    }
    settings = Settings(
        logs_dir=str(tmp_path / "runs" / "{timestamp}-{graph}"),
        workdir=str(tmp_path),
        **settings_kw,
    )
    kwargs.setdefault("backoff", NO_WAIT)
    # The launcher builds a run's backend; engine tests hand the run one themselves.
    kwargs.setdefault("backend", SimulateBackend())
    return RunOptions(settings=settings, **kwargs)


class Recorder:
    """Observer keeping every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, type_name: str) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.events if e.type == type_name]


async def run(graph: Graph, tmp_path: Path, **kwargs: Any) -> RunResult:
    return await run_pipeline(graph, tmp_path / "t.dot", options(tmp_path, **kwargs))


async def resume(run_dir: Path, tmp_path: Path, **kwargs: Any) -> RunResult:
    return await resume_pipeline(run_dir, options(tmp_path, **kwargs))


def executed(result: RunResult) -> list[str]:
    return [r.node for r in result.node_results]


def status_json(result: RunResult, node: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((result.run_dir / node / "status.json").read_text())
    return data


def checkpoint_json(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "checkpoint.json").read_text())
    return data
