"""``attractor runs`` (the runs under a folder) and ``attractor status RUN_DIR``.

Both show what runs spent: tokens in (cached input included), out, cached, and
the cost in US dollars: per run (the manifest's usage, every attempt counted)
and, in ``status``, per finished visit of each stage (results.jsonl), whose sum
is the run's once no stage is running or was cut short.
"""

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
  attractor runs --prune --older-than 30d --status success
  attractor runs --status fail,stopped --pipeline feature
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
    "(with --older-than: delete those runs first).",
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
        _prune(base)
    wanted = _statuses(statuses)
    found = select_runs(list_runs(base), wanted, pipeline)
    if as_json:
        click.echo(json.dumps([_run_json(r) for r in found], indent=2))
        sys.exit(0)
    if not found:
        which = " matching the filters" if wanted or pipeline else ""
        click.echo(f"no runs{which} under {base}")
        sys.exit(0)
    header = ["ID", "PIPELINE", "STATUS", "STARTED (UTC)", "DURATION", "NODES", *_SPEND]
    rows = [
        [
            r.id,
            r.name,
            r.status,
            iso(r.started_at),
            _seconds(r.duration),
            str(r.nodes_done),
            *_spend_cells(r.usage),
        ]
        for r in found
    ]
    click.echo(_table(header, rows))
    sys.exit(0)


def _prune_older(base: Path, older_than: str, wanted: list[str], pipeline: str | None) -> NoReturn:
    """``--prune --older-than``: delete the runs that ended before then, and their workspaces."""
    import anyio

    from attractor.dot.schema import DURATION_FORM, parse_duration
    from attractor.runview.listing import list_runs, select_runs
    from attractor.runview.prune import delete_run, ended_at, forget_workspaces, workspace_repo
    from attractor.runview.prune import older_than as aged

    try:
        seconds = parse_duration(older_than)
    except ValueError:
        click.echo(f"error: --older-than {older_than}: expected {DURATION_FORM}", err=True)
        sys.exit(2)
    found = aged(select_runs(list_runs(base), wanted, pipeline), seconds)
    deleted, kept, repos = 0, 0, [base]
    for run in found:
        repo = workspace_repo(run.path)
        why = delete_run(run.path)
        if why:
            click.echo(f"kept run {run.id}: {why}")
            kept += 1
            continue
        click.echo(f"deleted run {run.id} ({run.name}, {run.status}, ended {iso(ended_at(run))})")
        deleted += 1
        repos += [repo] if repo is not None else []
    for run_id in anyio.run(forget_workspaces, repos):
        click.echo(f"removed the worktree and branches of {run_id}")
    click.echo(f"deleted {deleted} run(s) that ended more than {older_than} ago; {kept} kept")
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


#: The spending columns: input tokens (cached ones included), output, cached input, dollars.
_SPEND = ["IN", "OUT", "CACHED", "COST"]


def _spend_cells(usage: object) -> list[str]:
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
    from attractor.runview.listing import is_run_dir, run_info
    from attractor.runview.timeline import Spend, next_action, stage_spending, timeline

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
    stages = stage_spending(path)
    action = next_action(path)
    if as_json:
        data = {
            **_run_json(info),
            "timeline": [r.to_json() for r in rows],
            "stages": [stage.to_json() for stage in stages],
            "next": action,
        }
        click.echo(json.dumps(data, indent=2))
        sys.exit(0)
    click.echo(f"run {info.id}: {info.name}, {info.status}")
    click.echo(f"started {iso(info.started_at) or '?'}, duration {_seconds(info.duration) or '?'}")
    total = Spend.of(info.usage)
    if total.tokens or total.cost:
        cost = f", cost ${total.cost:,.4f}" if total.cost is not None else ""
        parts = (
            f"{total.input_tokens:,} in, {total.cached_tokens:,} cached, "
            f"{total.output_tokens:,} out"
        )
        click.echo(f"tokens: {total.tokens:,} ({parts}; every attempt){cost}")
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
    if stages or total.tokens:
        click.echo("")
        click.echo("spent by stage (every attempt of each visit):")
        click.echo(_table(["NODE", "VISIT", "ATTEMPTS", *_SPEND], _stage_rows(stages, total)))
    click.echo("")
    click.echo(f"next: {action}")
    sys.exit(0)


def _stage_rows(stages: list[Any], total: Any) -> list[list[str]]:
    """One row per finished visit, what no finished visit holds yet, and the run's total."""
    from attractor.runview.timeline import Spend

    rows = [[s.node, str(s.visit), str(s.attempts), *_spend_cells(s.spend)] for s in stages]
    finished = sum((s.spend for s in stages), Spend())
    rest = total - finished
    if rest.tokens > 0:  # a stage running, or cut short by a stop, spent it
        rows.append(["(unfinished)", "", "", *_spend_cells(rest)])
    rows.append(["run", "", "", *_spend_cells(total)])
    return rows
