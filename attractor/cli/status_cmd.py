"""``attractor status RUN_DIR``: a run's timeline, what it spent and what a resume would do.

What it spent is shown per finished visit of each stage (results.jsonl, whose
sum is the run's once no stage is running or was cut short), per parallel
branch (the nodes from its first up to the fan-in), per model request (each
agent turn's event), and against the budgets the run was given (turns, tokens,
cost, time), as the web page shows them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from attractor.cli.run_arg import missing, run_dir_of
from attractor.cli.runs_cmd import SPEND, iso, run_json, seconds, spend_cells, table
from attractor.errors import UsageError

_STATUS_EPILOG = """\b
Examples:
  attractor status .attractor/runs/20261122T040646Z-feature
  attractor status runs/nightly --json
"""


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
    from attractor.runview.costs import branches, budgets, node_usage, requests
    from attractor.runview.inventory import run_graph
    from attractor.runview.listing import is_run_dir, run_info
    from attractor.runview.timeline import next_action, stage_spending, timeline

    path = run_dir_of(run_dir)
    try:
        problem = missing(run_dir)
        if problem is not None:
            raise UsageError(problem)
        if not path.is_dir() or not is_run_dir(path):
            raise UsageError(
                f"{run_dir}: not a run directory (no manifest.json or checkpoint.json); "
                "pass a directory that attractor run printed, or list them with attractor runs"
            )
    except UsageError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    info = run_info(path)
    spent: dict[str, Any] = {
        "stages": stage_spending(path),
        "branches": branches(run_graph(path), node_usage(path)),
        "requests": requests(path),
        "budgets": budgets(path, info),
    }
    if as_json:
        data = {
            **run_json(info),
            "timeline": [r.to_json() for r in timeline(path)],
            "stages": [stage.to_json() for stage in spent["stages"]],
            "next": next_action(path),
            "branches": spent["branches"],
            "requests": spent["requests"],
            "budgets": spent["budgets"],
        }
        click.echo(json.dumps(data, indent=2))
        sys.exit(0)
    _show(path, info, spent)
    sys.exit(0)


def _show(path: Path, info: Any, spent: dict[str, Any]) -> None:
    from attractor.runview.timeline import Spend, next_action, timeline

    click.echo(f"run {info.id}: {info.name}, {info.status}")
    click.echo(f"started {iso(info.started_at) or '?'}, duration {seconds(info.duration) or '?'}")
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
    click.echo(_timeline_table(timeline(path)))
    stages = spent["stages"]
    if stages or total.tokens:
        click.echo("")
        click.echo("spent by stage (every attempt of each visit):")
        click.echo(table(["NODE", "VISIT", "ATTEMPTS", *SPEND], _stage_rows(stages, total)))
    _spent_rows(spent)
    click.echo("")
    click.echo(f"next: {next_action(path)}")


def _timeline_table(rows: list[Any]) -> str:
    header = ["NODE", "VISIT", "ATTEMPT", "OUTCOME", "DURATION", "TOKENS", "ROUTE", "FILES"]
    if any(r.changed is not None for r in rows):
        header.append("CHANGED")
    cells = [
        [
            r.node,
            str(r.visit),
            str(r.attempt),
            r.status,
            seconds(r.duration),
            f"{r.tokens:,}" if r.tokens else "",
            r.route,
            r.files,
            *([_changed(r.changed)] if len(header) > 8 else []),
        ]
        for r in rows
    ]
    return table(header, cells)


def _spent_rows(spent: dict[str, Any]) -> None:
    """The branch, request and budget sections (each left out when it has no row)."""
    branch_rows = [
        [b["parallel"], b["branch"], ", ".join(b["nodes"]), *spend_cells(b["usage"])]
        for b in spent["branches"]
        if b["usage"] is not None
    ]
    if branch_rows:
        click.echo("")
        click.echo("spent by branch (its nodes up to the fan-in):")
        click.echo(table(["PARALLEL", "BRANCH", "NODES", *SPEND], branch_rows))
    request_rows = [
        [r["node"], str(r["visit"]), f"{r['turn']} {r['kind']}".strip(), *spend_cells(r)]
        for r in spent["requests"]
    ]
    if request_rows:
        click.echo("")
        click.echo("spent by request (each model request of an agent node):")
        click.echo(table(["NODE", "VISIT", "TURN", *SPEND], request_rows))
    limited = [b for b in spent["budgets"] if b["limit"] is not None]
    click.echo("")
    if not limited:
        click.echo("budgets: none (--max-total-turns, --max-total-tokens, --max-cost, --timeout)")
        return
    click.echo("budgets:")
    click.echo(table(["BUDGET", "USED", "LIMIT", "SHARE"], [_budget_row(b) for b in limited]))


def _budget_row(budget: dict[str, Any]) -> list[str]:
    used, limit = budget["used"] or 0, budget["limit"]
    if budget["name"] == "cost":
        shown = [f"${used:,.4f}", f"${limit:,.4f}"]
    elif budget["name"] == "time":
        shown = [seconds(used), seconds(limit)]
    else:
        shown = [f"{round(used):,}", f"{limit:,}"]
    share = f"{min(used / limit, 9.99):.0%}" if limit else ""
    return [budget["name"], *shown, share]


def _stage_rows(stages: list[Any], total: Any) -> list[list[str]]:
    """One row per finished visit, what no finished visit holds yet, and the run's total."""
    from attractor.runview.timeline import Spend

    rows = [[s.node, str(s.visit), str(s.attempts), *spend_cells(s.spend)] for s in stages]
    finished = sum((s.spend for s in stages), Spend())
    rest = total - finished
    if rest.tokens > 0:  # a stage running, or cut short by a stop, spent it
        rows.append(["(unfinished)", "", "", *spend_cells(rest)])
    rows.append(["run", "", "", *spend_cells(total)])
    return rows
