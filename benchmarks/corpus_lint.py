"""Lint and dry-run every pipeline of a folder, and count what fails and why.

Usage: ``python benchmarks/corpus_lint.py FOLDER [--json] [--by-project] [--show RULE] [--list]
[--from-empty] [--simulate]``

Every ``*.dot`` file under FOLDER (recursively) is linted as ``attractor lint``
lints it, then dry-run as ``attractor run FILE --dry-run`` runs it (the real
command, in this process), from the file's project folder (the first folder
under FOLDER: a project's checkout), as its users run it; ``--from-empty``
lints from an empty temporary directory instead. The report gives the number
of files, of files that do not parse, of files with at least one lint error,
of files that lint clean but whose dry run still fails, then each error rule
and each warning rule with its count of diagnostics and of files.

A folder with an ``index.json`` (``{"files": [{"file": ..., "repo": ...}]}``)
names each file's project; ``--by-project`` then also prints, per project,
its files and the files with errors. ``--show RULE`` lists every diagnostic
of one rule (file:line:col and message), to read before judging a rule.
``--list`` prints one line per file instead: its path and the error rules it
breaks (``clean`` when none), to compare two versions of attractor with
``diff``. ``--json`` prints the figures as one JSON document.

``--simulate`` also runs every file that lints clean, as
``attractor run FILE --backend simulate --auto-approve --timeout 60s
--sandbox required --workspace none`` (a subprocess each), from a copy of its
project's folder in a temporary directory under ``benchmarks/out/`` (not the
system's temporary folder, which the sandbox hides from commands): tool
commands really run, in the sandbox, with the network off, and can write only
in that copy. It prints how
many runs succeed, and each that does not with its exit code and last line.

Nothing is written into FOLDER.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from attractor.api import lint
from attractor.cli.main import cli
from attractor.errors import Diagnostic, PipelineError
from attractor.linter.base import closed_handler_types


@dataclass
class FileResult:
    """What linting and dry-running one file gave."""

    path: Path
    project: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    unreadable: str | None = None
    dry_run_code: int = 0
    dry_run_error: str | None = None

    @property
    def parse_error(self) -> bool:
        return any(d.rule == "syntax" for d in self.diagnostics)

    @property
    def has_errors(self) -> bool:
        return self.unreadable is not None or any(d.is_error for d in self.diagnostics)


def projects(folder: Path) -> dict[Path, str]:
    """File -> project from the folder's ``index.json`` (empty without one)."""
    index = folder / "index.json"
    if not index.is_file():
        return {}
    entries = json.loads(index.read_text(encoding="utf-8")).get("files", [])
    return {(folder / e["file"]).resolve(): e.get("repo", "?") for e in entries if "file" in e}


def dry_run(runner: CliRunner, path: Path) -> tuple[int, str | None]:
    """Exit code of ``attractor run PATH --dry-run`` and its first ``error:`` line."""
    result = runner.invoke(cli, ["run", str(path), "--dry-run"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return 99, f"crash: {type(result.exception).__name__}: {result.exception}"
    for line in result.stderr.splitlines():
        if line.startswith("error: "):
            return result.exit_code, line
    return result.exit_code, None


def _project_root(root: Path, path: Path) -> Path:
    """The first folder under ``root`` on the way to ``path`` (its project's checkout)."""
    parts = path.relative_to(root).parts
    return root / parts[0] if len(parts) > 1 else root


def check(folder: Path, from_project: bool = True) -> list[FileResult]:
    """Lint and dry-run every ``.dot`` file under ``folder``.

    With ``from_project``, each file is linted and dry-run from its project's
    folder (the first folder under ``folder``), as a user runs a project's
    pipelines from its root: paths some engines write from the root (a
    sub-pipeline's ``pipelines/x.dot``) then resolve. Otherwise from an empty
    temporary folder. A folder of pipelines from elsewhere holds no
    ``attractor.toml`` (check before measuring), so no config file is read.
    """
    names = projects(folder)
    files = sorted(p.resolve() for p in folder.rglob("*.dot") if p.is_file())
    runner = CliRunner()
    results = []
    root = folder.resolve()
    with tempfile.TemporaryDirectory() as empty:
        here = Path.cwd()
        try:
            for path in files:
                os.chdir(_project_root(root, path) if from_project else empty)
                result = FileResult(path, names.get(path, path.parent.name))
                try:
                    # As `attractor lint` does: no handler can be registered
                    # from the command line, so an unknown type is an error.
                    with closed_handler_types():
                        result.diagnostics = lint(path)
                except PipelineError as error:
                    result.unreadable = str(error)
                result.dry_run_code, result.dry_run_error = dry_run(runner, path)
                results.append(result)
        finally:
            os.chdir(here)
    return results


def _rules(results: list[FileResult], severity: str) -> list[dict[str, Any]]:
    count: Counter[str] = Counter()
    files: defaultdict[str, set[Path]] = defaultdict(set)
    for result in results:
        for d in result.diagnostics:
            if d.severity == severity:
                count[d.rule] += 1
                files[d.rule].add(result.path)
    return [
        {"rule": rule, "count": n, "files": len(files[rule])} for rule, n in count.most_common()
    ]


def summary(results: list[FileResult]) -> dict[str, Any]:
    """The figures of the report, as the JSON document prints them."""
    clean_but_failing = [r for r in results if not r.has_errors and r.dry_run_code != 0]
    by_project: defaultdict[str, list[FileResult]] = defaultdict(list)
    for result in results:
        by_project[result.project].append(result)
    return {
        "files": len(results),
        "projects": len(by_project),
        "unreadable": sum(r.unreadable is not None for r in results),
        "parse_errors": sum(r.parse_error for r in results),
        "files_with_errors": sum(r.has_errors for r in results),
        "files_with_warnings": sum(
            any(d.severity == "warning" for d in r.diagnostics) for r in results
        ),
        "dry_run_failures": sum(r.dry_run_code != 0 for r in results),
        "dry_run_failures_without_lint_errors": len(clean_but_failing),
        "dry_run_errors": dict(
            Counter(
                (r.dry_run_error or f"exit {r.dry_run_code}") for r in clean_but_failing
            ).most_common()
        ),
        "error_rules": _rules(results, "error"),
        "warning_rules": _rules(results, "warning"),
        "by_project": {
            name: {"files": len(rs), "files_with_errors": sum(r.has_errors for r in rs)}
            for name, rs in sorted(by_project.items())
        },
    }


def print_text(figures: dict[str, Any], by_project: bool) -> None:
    print(f"files: {figures['files']} ({figures['projects']} projects)")
    print(f"unreadable: {figures['unreadable']}")
    print(f"parse errors: {figures['parse_errors']}")
    print(f"files with errors: {figures['files_with_errors']}")
    print(f"files with warnings: {figures['files_with_warnings']}")
    print(f"dry run fails: {figures['dry_run_failures']}")
    print(f"dry run fails, lint clean: {figures['dry_run_failures_without_lint_errors']}")
    for message, n in figures["dry_run_errors"].items():
        print(f"  {n:>5}  {message}")
    for severity in ("error", "warning"):
        print(f"{severity} rules (diagnostics, files):")
        for row in figures[f"{severity}_rules"]:
            print(f"  {row['count']:>5} {row['files']:>4}  {row['rule']}")
    if by_project:
        print("projects (files, files with errors):")
        for name, row in figures["by_project"].items():
            print(f"  {row['files']:>5} {row['files_with_errors']:>4}  {name}")


def show(results: list[FileResult], rule: str, folder: Path) -> None:
    """Every diagnostic of ``rule``, one line each, paths relative to ``folder``."""
    root = folder.resolve()
    for result in results:
        for d in result.diagnostics:
            if d.rule == rule:
                where = Path(d.file).resolve() if d.file else result.path
                name = where.relative_to(root) if where.is_relative_to(root) else where
                print(f"{name}:{d.line}:{d.column}: {d.severity} {d.message}")


def list_files(results: list[FileResult], folder: Path) -> None:
    """One line per file: its path, then its error rules or ``clean``."""
    root = folder.resolve()
    for result in results:
        rules = sorted({d.rule for d in result.diagnostics if d.is_error})
        if result.unreadable is not None:
            rules.insert(0, "unreadable")
        print(f"{result.path.relative_to(root)}\t{' '.join(rules) or 'clean'}")


#: Where simulated runs work: the sandbox hides the system's temporary folder.
SCRATCH = Path(__file__).resolve().parent / "out"
SIMULATE = [
    "--backend",
    "simulate",
    "--auto-approve",
    "--timeout",
    "60s",
    "--sandbox",
    "required",
    "--workspace",
    "none",
]


def simulate(results: list[FileResult], folder: Path) -> list[tuple[Path, int, str]]:
    """Run every file that lints clean; (file, exit code, last output line) of each."""
    root = folder.resolve()
    clean = [r.path for r in results if not r.has_errors]
    by_project: defaultdict[Path, list[Path]] = defaultdict(list)
    for path in clean:
        by_project[_project_root(root, path)].append(path)
    outcomes = []
    SCRATCH.mkdir(parents=True, exist_ok=True)
    for project, paths in sorted(by_project.items()):
        with tempfile.TemporaryDirectory(dir=SCRATCH) as scratch:
            copy = Path(scratch) / "project"
            shutil.copytree(project, copy, symlinks=True)
            for number, path in enumerate(paths):
                here = copy / path.relative_to(project)
                logs = Path(scratch) / "runs" / str(number)
                done = subprocess.run(
                    [sys.executable, "-m", "attractor", "run", str(here), *SIMULATE]
                    + ["--logs-dir", str(logs)],
                    cwd=copy,
                    capture_output=True,
                    text=True,
                    timeout=180,
                    check=False,
                )
                said = (done.stdout + done.stderr).strip().splitlines()
                ending = [line for line in said if line.startswith("pipeline ")] or said
                outcomes.append((path, done.returncode, ending[-1] if ending else ""))
    return outcomes


def print_simulated(outcomes: list[tuple[Path, int, str]], folder: Path) -> None:
    root = folder.resolve()
    ok = sum(code == 0 for _, code, _ in outcomes)
    print(f"simulated runs of clean files: {len(outcomes)}, succeeded: {ok}")
    for path, code, last in outcomes:
        if code != 0:
            print(f"  exit {code}  {path.relative_to(root)}: {last[:200]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--by-project", action="store_true", help="add a line per project")
    parser.add_argument("--show", metavar="RULE", help="list every diagnostic of RULE")
    parser.add_argument("--list", action="store_true", help="one line per file: its error rules")
    parser.add_argument(
        "--simulate", action="store_true", help="also run each clean file, simulated"
    )
    parser.add_argument(
        "--from-empty",
        action="store_true",
        help="lint from an empty folder, not from each file's project folder",
    )
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"corpus_lint: {args.folder}: not a folder", file=sys.stderr)
        return 2
    results = check(args.folder, from_project=not args.from_empty)
    if args.list:
        list_files(results, args.folder)
        return 0
    if args.show:
        show(results, args.show, args.folder)
        return 0
    figures = summary(results)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print_text(figures, args.by_project)
    if args.simulate:
        print_simulated(simulate(results, args.folder), args.folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
