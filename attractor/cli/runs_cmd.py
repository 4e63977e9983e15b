"""``attractor runs`` (the runs under a folder) and ``attractor status RUN_DIR``."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import click

from attractor.errors import UsageError

_RUNS_EPILOG = """\b
Examples:
  attractor runs
  attractor runs --root runs --json
  attractor runs --prune
"""

_STATUS_EPILOG = """\b
Examples:
  attractor status .attractor/runs/20261122T040646Z-feature
  attractor status runs/nightly --json
"""


def iso(ts: float | None) -> str:
    """``2026-11-23T17:38:33Z`` for an epoch time; "" when unknown."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    if value < 60:
        return f"{value:.1f}s"
    minutes, secs = divmod(round(value), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]
    return "\n".join(lines)


@click.command(epilog=_RUNS_EPILOG)
@click.option(
    "--root",
    "root",
    metavar="DIR",
    default=".",
    show_default=True,
    help="Folder whose .attractor/runs (and itself) hold run directories.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document: a list of runs.")
@click.option(
    "--prune",
    is_flag=True,
    help="Remove the worktrees and branches of runs whose run directory was deleted.",
)
def runs(root: str, as_json: bool, prune: bool) -> NoReturn:
    """List the runs under DIR, newest first."""
    from attractor.runview.inventory import list_runs

    base = Path(root)
    if not base.is_dir():
        click.echo(f"error: --root {root}: no such directory", err=True)
        sys.exit(2)
    if prune:
        _prune(base)
    found = list_runs(base)
    if as_json:
        click.echo(json.dumps([_run_json(r) for r in found], indent=2))
        sys.exit(0)
    if not found:
        click.echo(f"no runs under {base}")
        sys.exit(0)
    header = ["ID", "PIPELINE", "STATUS", "STARTED (UTC)", "DURATION", "NODES", "TOKENS"]
    rows = [
        [
            r.id,
            r.name,
            r.status,
            iso(r.started_at),
            _seconds(r.duration),
            str(r.nodes_done),
            f"{r.tokens:,}",
        ]
        for r in found
    ]
    click.echo(_table(header, rows))
    sys.exit(0)


def _prune(base: Path) -> NoReturn:
    """``--prune``: the git repository at ``base`` forgets the runs whose directory is gone."""
    import anyio

    from attractor.workspace.prune import prune

    done = anyio.run(prune, base)
    for run_id in done.removed:
        click.echo(f"removed the worktree and branches of {run_id} (its run directory is gone)")
    click.echo(f"pruned {len(done.removed)} run(s); {len(done.kept)} kept (run directory exists)")
    sys.exit(0)


def _run_json(info: Any) -> dict[str, Any]:
    data: dict[str, Any] = info.to_json()
    data["started_at_iso"] = iso(info.started_at)
    data["finished_at_iso"] = iso(info.finished_at)
    return data


def _changed(count: int | None) -> str:
    """Files a stage changed in the run's workspace: ``2 files``, ``1 file``, or nothing."""
    if not count:
        return ""
    return f"{count} file" + ("" if count == 1 else "s")


@click.command(epilog=_STATUS_EPILOG)
@click.argument("run_dir", metavar="RUN_DIR")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
def status(run_dir: str, as_json: bool) -> NoReturn:
    """Show a run's timeline (every visit and attempt) and what a resume would do."""
    from attractor.runview.inventory import is_run_dir, run_info
    from attractor.runview.timeline import next_action, timeline

    path = Path(run_dir)
    try:
        if not path.is_dir() or not is_run_dir(path):
            raise UsageError(
                f"{run_dir}: not a run directory (no manifest.json or checkpoint.json); "
                "pass a directory that attractor run printed, or list them with attractor runs"
            )
    except UsageError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    info = run_info(path)
    rows = timeline(path)
    action = next_action(path)
    if as_json:
        data = {**_run_json(info), "timeline": [r.to_json() for r in rows], "next": action}
        click.echo(json.dumps(data, indent=2))
        sys.exit(0)
    click.echo(f"run {info.id}: {info.name}, {info.status}")
    click.echo(f"started {iso(info.started_at) or '?'}, duration {_seconds(info.duration) or '?'}")
    if info.tokens or info.cost:
        cost = f", cost ${info.cost:,.4f}" if info.cost is not None else ""
        click.echo(f"tokens: {info.tokens:,} (every attempt){cost}")
    if info.failure_reason:
        click.echo(f"reason: {info.failure_reason}")
    click.echo("")
    header = ["NODE", "VISIT", "ATTEMPT", "OUTCOME", "DURATION", "TOKENS", "ROUTE", "FILES"]
    if any(r.changed is not None for r in rows):
        header.append("CHANGED")
    table = [
        [
            r.node,
            str(r.visit),
            str(r.attempt),
            r.status,
            _seconds(r.duration),
            f"{r.tokens:,}" if r.tokens else "",
            r.route,
            r.files,
            *([_changed(r.changed)] if len(header) > 8 else []),
        ]
        for r in rows
    ]
    click.echo(_table(header, table))
    click.echo("")
    click.echo(f"next: {action}")
    sys.exit(0)
