"""``attractor explain RULE``: what a lint rule checks, why, and what to do."""

from __future__ import annotations

import click

_EPILOG = """\b
Examples:
  attractor explain shape_known
  attractor explain --list
"""


@click.command(epilog=_EPILOG)
@click.argument("rule", required=False)
@click.option("--list", "list_all", is_flag=True, help="List every rule id and its severity.")
def explain(rule: str | None, list_all: bool) -> None:
    """Print the reference of lint RULE (the id shown in every diagnostic)."""
    from attractor.linter.catalog import explain as render
    from attractor.linter.catalog import find_rule, rule_docs, suggest_rule

    if list_all or rule is None:
        for doc in rule_docs():
            click.echo(f"{doc.name:24} {' or '.join(doc.severities)}")
        return
    found = find_rule(rule)
    if found is None:
        close = suggest_rule(rule)
        hint = f"did you mean {close}? " if close else ""
        click.echo(f"error: no lint rule {rule!r}; {hint}run attractor explain --list", err=True)
        raise SystemExit(2)
    click.echo(render(found), nl=False)
