"""What a run spent, as ``attractor status``, the API and the page show it: per request,
node, branch and run, and the budgets it was given.

The run's total is the manifest's ``usage`` (the checkpoint's while the run
goes on), as :func:`attractor.runview.listing.run_info` reads it. Each node's
is the sum of its rows in results.jsonl (every visit, every attempt of a
visit); a parallel branch's is the sum of the nodes it runs, from its first
node up to the fan-in. Each request (an agent turn) is read from its
``agent_turn_completed`` event. The budgets the run was started with (the
manifest's recorded settings) are set against what it used.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from attractor.dot.graph import Graph
from attractor.dot.schema import parse_duration
from attractor.errors import AttractorError
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import read_lines
from attractor.run_status import RunStatus
from attractor.runview.files import read_manifest, results_file
from attractor.runview.inventory import read_events
from attractor.runview.listing import RunInfo, load_checkpoint, run_seconds

#: The counts a usage object holds, as the manifest names them.
COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
#: The node type that joins parallel branches: a branch ends before it.
FAN_IN = "parallel.fan_in"


def usage_json(usage: object) -> dict[str, Any] | None:
    """A usage object (a manifest's, a results row's) with its counts and cost only."""
    if not isinstance(usage, dict):
        return None
    data: dict[str, Any] = {k: _int(usage.get(k)) for k in COUNTS}
    cost = usage.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        data["cost"] = float(cost)
    return data


def add_usage(total: dict[str, Any] | None, more: dict[str, Any] | None) -> dict[str, Any] | None:
    """``total`` plus ``more``; a cost is kept when either has one."""
    if more is None:
        return total
    if total is None:
        return dict(more)
    summed: dict[str, Any] = {k: total.get(k, 0) + more.get(k, 0) for k in COUNTS}
    if "cost" in total or "cost" in more:
        summed["cost"] = total.get("cost", 0.0) + more.get("cost", 0.0)
    return summed


def node_usage(path: Path) -> dict[str, dict[str, Any]]:
    """Each node's spending over its rows of results.jsonl (nodes that spent nothing left out).

    The rows are streamed; a row that cannot be read ends them (as for a resume).
    """
    spent: dict[str, dict[str, Any]] = {}
    results = results_file(path)
    try:
        for _, line in read_lines(results, "results file"):
            row = loads_json(line.decode("utf-8"), results, "results row")
            if not isinstance(row, dict):
                break
            usage = usage_json(row.get("usage"))
            node = row.get("node")
            if usage is not None and isinstance(node, str):
                spent[node] = add_usage(spent.get(node), usage) or usage
    except (AttractorError, ValueError):  # damaged: what came before it stands
        pass
    return spent


def branches(graph: Graph | None, spent: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every branch of every parallel node: its nodes and what they spent."""
    if graph is None:
        return []
    found = []
    for node in graph.nodes():
        if node.handler_type != "parallel":
            continue
        for edge in graph.outgoing(node.id):
            members = _branch_nodes(graph, edge.target)
            total: dict[str, Any] | None = None
            for member in members:
                total = add_usage(total, spent.get(member))
            found.append(
                {"parallel": node.id, "branch": edge.target, "nodes": members, "usage": total}
            )
    return found


def _branch_nodes(graph: Graph, first: str) -> list[str]:
    """The nodes reachable from ``first`` before a fan-in (or an exit)."""
    seen: list[str] = []
    todo = [first]
    while todo:
        current = todo.pop(0)
        if current in seen or not graph.has_node(current):
            continue
        node = graph.node(current)
        if node.handler_type in (FAN_IN, "exit"):
            continue
        seen.append(current)
        todo.extend(edge.target for edge in graph.outgoing(current))
    return seen


def requests(path: Path, node_id: str | None = None) -> list[dict[str, Any]]:
    """Each model request (agent turn) of ``node_id`` (of every node when None): its node,
    visit, turn, tokens and cost, in the order they were made."""
    found: list[dict[str, Any]] = []
    visits: dict[str, int] = {}
    for _, event in read_events(path):
        kind = event.get("type")
        if kind == "stage_started" and isinstance(event.get("name"), str):
            name = str(event["name"])
            numbered = event.get("visit")
            visits[name] = numbered if isinstance(numbered, int) else visits.get(name, 0) + 1
        elif kind == "agent_turn_completed" and node_id in (None, event.get("node")):
            node = str(event.get("node", ""))
            found.append(
                {
                    "node": node,
                    "visit": visits.get(node, 0),
                    "turn": _int(event.get("turn")),
                    "kind": str(event.get("kind", "")),
                    "input_tokens": _int(event.get("input_tokens")),
                    "output_tokens": _int(event.get("output_tokens")),
                    "cache_read_tokens": _int(event.get("cache_read_tokens")),
                    "cache_write_tokens": _int(event.get("cache_write_tokens")),
                    "cost": _number(event.get("cost")),
                    "ts": event.get("ts"),
                }
            )
    return found


def budgets(path: Path, info: RunInfo) -> list[dict[str, Any]]:
    """The run's budgets (turns, tokens, cost, time): each one's limit and what is used.

    ``limit`` is None when the run has none of that kind.
    """
    try:
        manifest = read_manifest(path)
    except AttractorError:
        manifest = {}
    recorded = manifest.get("settings")
    settings: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    usage = info.usage or {}
    checkpoint = load_checkpoint(path)
    turns = checkpoint.run_turns_used if checkpoint is not None else 0
    since = _number(manifest.get("resumed_at")) or info.started_at
    if info.status == RunStatus.RUNNING and since is not None:
        before = _number(manifest.get("active_seconds_before")) or 0.0
        elapsed: float | None = before + max(0.0, time.time() - since)
    else:
        elapsed = run_seconds(manifest)
    return [
        {"name": "turns", "used": turns, "limit": _limit(settings, "max_total_turns", int)},
        {
            "name": "tokens",
            "used": usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
            "limit": _limit(settings, "max_total_tokens", int),
        },
        {"name": "cost", "used": usage.get("cost", 0.0), "limit": _limit(settings, "max_cost")},
        {"name": "time", "used": elapsed, "limit": _limit(settings, "timeout", parse_duration)},
    ]


def _limit(settings: dict[str, Any], name: str, parse: Any = float) -> Any:
    raw = settings.get(name)
    if raw is None:
        return None
    try:
        text = str(raw).strip().removeprefix("$")
        return parse(text)
    except ValueError:
        return None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _number(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None  # type: ignore[arg-type]
