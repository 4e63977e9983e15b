"""``attractor runs``: the runs under a folder, with what each spent, and pruning them.

What a run spent is shown as tokens in (cached input included), out, cached,
and the cost in US dollars: the manifest's usage, every attempt counted. The
table helpers here are ``attractor status``'s too (:mod:`attractor.cli.status_cmd`).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import click

_RUNS_EPILOG = """\b
Examples:
  attractor runs
  attractor runs --root runs --json
  attractor runs --prune
  attractor runs --prune --older-than 30d --status success
  attractor runs --status fail,stopped --pipeline feature
"""


def iso(ts: float | None) -> str:
    """``2026-11-23T17:38:33Z`` for an epoch time; "" when unknown."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds(value: float | None) -> str:
    if value is None:
        return ""
    if value < 60:
        return f"{value:.1f}s"
    minutes, secs = divmod(round(value), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def table(header: list[str], rows: list[list[str]]) -> str:
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
@click.option(
    "--status",
    "statuses",
    metavar="STATUS",
    multiple=True,
    help="Only runs with this status (repeatable, or comma-separated: fail,stopped).",
)
@click.option(
    "--pipeline", metavar="NAME", help="Only runs of this pipeline (a name or a pattern: night*)."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document: a list of runs.")
@click.option(
    "--prune",
    is_flag=True,
    help="Remove the worktrees and branches of runs whose run directory was deleted "
    "(with --older-than: delete the runs that ended before then, with their worktrees "
    "and branches, instead).",
)
@click.option(
    "--older-than",
    "older_than",
    metavar="DURATION",
    help="With --prune: delete the runs that ended more than DURATION ago (7d, 12h), "
    "their run directories and workspaces; runs still going are kept.",
)
def runs(
    root: str,
    statuses: tuple[str, ...],
    pipeline: str | None,
    as_json: bool,
    prune: bool,
    older_than: str | None,
) -> NoReturn:
    """List the runs under DIR, newest first, with what each spent."""
    from attractor.runview.listing import list_runs, select_runs

    base = Path(root)
    if not base.is_dir():
        click.echo(f"error: --root {root}: no such directory", err=True)
        sys.exit(2)
    if older_than is not None and not prune:
        click.echo(
            "error: --older-than goes with --prune: attractor runs --prune --older-than 7d",
            err=True,
        )
        sys.exit(2)
    if prune:
        if as_json or (older_than is None and (statuses or pipeline)):
            click.echo(
                "error: --prune takes no --status, --pipeline or --json (--status and "
                "--pipeline only with --older-than): alone it removes the worktrees and branches "
                "of every run whose run directory is gone (delete the run directories you no "
                "longer want first, or add --older-than DURATION)",
                err=True,
            )
            sys.exit(2)
        if older_than is not None:
            _prune_older(base, older_than, _statuses(statuses), pipeline)
        else:
            _prune(base)
    wanted = _statuses(statuses)
    found = select_runs(list_runs(base), wanted, pipeline)
    if as_json:
        click.echo(json.dumps([run_json(r) for r in found], indent=2))
        sys.exit(0)
    if not found:
        which = " matching the filters" if wanted or pipeline else ""
        click.echo(f"no runs{which} under {base}")
        sys.exit(0)
    header = ["ID", "PIPELINE", "STATUS", "STARTED (UTC)", "DURATION", "NODES", *SPEND]
    rows = [
        [
            r.id,
            r.name,
            r.status,
            iso(r.started_at),
            seconds(r.duration),
            str(r.nodes_done),
            *spend_cells(r.usage),
        ]
        for r in found
    ]
    click.echo(table(header, rows))
    sys.exit(0)


def _prune_older(base: Path, older_than: str, wanted: list[str], pipeline: str | None) -> NoReturn:
    """``--prune --older-than``: delete the runs that ended before then, and their workspaces."""
    from attractor.cli import stop_signals
    from attractor.dot.schema import DURATION_FORM, parse_duration
    from attractor.runview.listing import list_runs, select_runs
    from attractor.runview.prune import delete_runs, ended_at
    from attractor.runview.prune import older_than as aged

    try:
        age = parse_duration(older_than)
    except ValueError:
        click.echo(f"error: --older-than {older_than}: expected {DURATION_FORM}", err=True)
        sys.exit(2)
    found = aged(select_runs(list_runs(base), wanted, pipeline), age)
    done = stop_signals.run(delete_runs, [(run.id, run.path, False) for run in found])
    for run in found:
        if run.id in done.kept:
            click.echo(f"kept run {run.id}: {done.kept[run.id]}")
        else:
            ended = iso(ended_at(run))
            click.echo(f"deleted run {run.id} ({run.name}, {run.status}, ended {ended})")
    for run_id in done.workspaces:
        click.echo(f"removed the worktree and branches of {run_id}")
    deleted, kept = len(done.deleted), len(done.kept)
    click.echo(f"deleted {deleted} run(s) that ended more than {older_than} ago; {kept} kept")
    sys.exit(0)


def _prune(base: Path) -> NoReturn:
    """``--prune``: the git repository at ``base`` forgets the runs whose directory is gone."""
    from attractor.cli import stop_signals
    from attractor.workspace.prune import prune

    done = stop_signals.run(prune, base)
    for run_id in done.removed:
        click.echo(f"removed the worktree and branches of {run_id} (its run directory is gone)")
    click.echo(f"pruned {len(done.removed)} run(s); {len(done.kept)} kept (run directory exists)")
    sys.exit(0)


#: The spending columns: input tokens (cached ones included), output, cached input, dollars.
SPEND = ["IN", "OUT", "CACHED", "COST"]


def spend_cells(usage: object) -> list[str]:
    from attractor.runview.timeline import Spend

    spend = usage if isinstance(usage, Spend) else Spend.of(usage)
    cost = f"${spend.cost:,.4f}" if spend.cost is not None else ""
    return [f"{spend.input_tokens:,}", f"{spend.output_tokens:,}", f"{spend.cached_tokens:,}", cost]


def _statuses(given: tuple[str, ...]) -> list[str]:
    """The ``--status`` values, each checked (one line and exit 2 for an unknown one)."""
    from attractor.runview.listing import LISTED_STATUSES

    wanted = [part.strip() for value in given for part in value.split(",") if part.strip()]
    for value in wanted:
        if value not in LISTED_STATUSES:
            known = ", ".join(LISTED_STATUSES)
            click.echo(
                f"error: --status {value}: no run has that status; use one of {known}", err=True
            )
            sys.exit(2)
    return wanted


def run_json(info: Any) -> dict[str, Any]:
    data: dict[str, Any] = info.to_json()
    data["started_at_iso"] = iso(info.started_at)
    data["finished_at_iso"] = iso(info.finished_at)
    return data
