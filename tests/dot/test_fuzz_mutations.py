"""Mutated example pipelines never crash ``prepare`` or ``attractor lint``.

Seeded and fixed-size (see tests/dot/fuzzkit.py); benchmarks/fuzz_dot.py runs
the same checks on many more inputs. A failure prints the seed, the case index
and the mutated input, which is all it takes to reproduce it.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from attractor.errors import Diagnostic
from attractor.linter.base import closed_handler_types
from attractor.linter.prepare import prepare
from tests.dot.fuzzkit import (
    ROOT,
    Case,
    Mutator,
    check_case,
    line_problems,
    load_corpus,
    read_text,
    time_limit,
)

SEED = 20_240_611
IN_PROCESS_CASES = 400
CLI_CASES = 20
SINGLE_FILE_RUNS = 4
#: Per-input budget: the slowest case takes well under a second.
BUDGET_SECONDS = 5.0


@pytest.fixture(scope="module")
def mutator() -> Mutator:
    return Mutator(load_corpus(), SEED)


def _report(failures: list[str], tried: int) -> str:
    shown = "\n\n".join(failures[:3])
    return f"{len(failures)} of {tried} mutated inputs failed; first ones:\n\n{shown}"


def test_prepare_returns_diagnostics_or_raises_attractor_error(
    mutator: Mutator, tmp_path: Path
) -> None:
    cases = [*mutator.cases(IN_PROCESS_CASES), *mutator.sample(len(mutator.names))]
    path = tmp_path / "fuzz.dot"
    seen: collections.Counter[str] = collections.Counter()
    failures = []
    for case in cases:
        result = check_case(case, path, BUDGET_SECONDS)
        seen[result.status] += 1
        if result.status == "crash":
            failures.append(f"{case.reproducer()}\n{result.problem}")
    assert not failures, _report(failures, len(cases))
    # The fuzzer must keep reaching every outcome, lint rules included.
    assert seen["parsed"] >= len(cases) // 10, seen
    assert seen["syntax"] and seen["unreadable"], seen


def _cli(paths: list[Path], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")}
    return subprocess.run(
        [sys.executable, "-m", "attractor", "lint", *args, *map(str, paths)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=60,
        check=False,
        cwd=ROOT,
        env={**env, "NO_COLOR": "1"},
    )


def _diagnostic(element: dict[str, Any]) -> Diagnostic:
    """A JSON element back as a Diagnostic (``docs`` is derived from the rule)."""
    fields = {k: v for k, v in element.items() if k != "docs"}
    return Diagnostic(**{**fields, "edge": None})


def _json_problems(stdout: str, texts: dict[str, str]) -> list[str]:
    try:
        found = json.loads(stdout)
    except json.JSONDecodeError as error:
        return [f"--format json output is not JSON ({error}): {stdout[:500]!r}"]
    return [
        f"{file}: {problem}"
        for file, text in texts.items()
        for problem in line_problems(
            [_diagnostic(d) for d in found if d["file"] == file and d["rule"] != "unreadable"],
            text,
        )
    ]


def _check_cli(files: dict[Path, Case], expected: int, args: tuple[str, ...]) -> list[str]:
    """Problems with one ``attractor lint [ARGS] FILE...`` run."""
    try:
        done = _cli(list(files), *args)
    except subprocess.TimeoutExpired:
        return ["did not exit within 60s"]
    where = f"lint {' '.join(args)} exited {done.returncode}"
    if "Traceback" in done.stderr or done.returncode not in (0, 1, 2):
        return [f"{where}; stderr:\n{done.stderr[-3000:]}"]
    if done.returncode != expected:
        return [f"{where}, but prepare() says {expected}; stderr:\n{done.stderr}"]
    if args and done.returncode in (0, 1):
        texts = {str(path): read_text(case.data) for path, case in files.items()}
        return _json_problems(done.stdout, texts)
    return []


def test_cli_exits_cleanly_on_mutated_files(mutator: Mutator, tmp_path: Path) -> None:
    # One case per mutation kind (then round again).
    cases = mutator.sample(2 * len(mutator.names))
    by_code: dict[int, dict[Path, Case]] = collections.defaultdict(dict)
    for case in cases[:CLI_CASES]:
        path = tmp_path / f"case{case.index}.dot"
        # As the command line lints: no handler types can be registered there.
        with closed_handler_types():
            result = check_case(case, path, BUDGET_SECONDS)
        assert result.status != "crash", f"{case.reproducer()}\n{result.problem}"
        code = 2 if result.status == "unreadable" else 1 if result.has_errors else 0
        by_code[code][path] = case
    # A cold start costs ~0.5 s, so files that should exit alike share a run per
    # format, and a few files also run alone.
    json_format = ("--format", "json")
    runs = [(files, code, args) for code, files in by_code.items() for args in ((), json_format)]
    for n, (path, case) in enumerate(list(by_code[1].items())[:SINGLE_FILE_RUNS]):
        runs.append(({path: case}, 1, json_format if n % 2 else ()))
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = list(pool.map(lambda run: _check_cli(*run), runs))
    failures = [
        "\n".join([*problems, *(c.reproducer(600) for c in files.values())])
        for (files, _, _), problems in zip(runs, found, strict=True)
        if problems
    ]
    assert not failures, _report(failures, len(runs))
    assert {1, 2} <= set(by_code), "the sample should reach lint errors and unreadable files"


def test_same_case_from_same_seed() -> None:
    corpus = load_corpus()
    first = [c.data for c in Mutator(corpus, 7).cases(30)]
    assert first == [c.data for c in Mutator(corpus, 7).cases(30)]
    assert first != [c.data for c in Mutator(corpus, 8).cases(30)]


# -- lexer bugs the fuzzer found (now fixed) -------------------------------------------------

VALID = "digraph G {\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n  start -> exit\n}\n"


def test_trailing_blank_lines_lint_quickly() -> None:
    with time_limit(1.0):
        assert prepare(VALID + "\n" * 40)[1] == []


@pytest.mark.parametrize("tail", ["// end\n", "// end", "/* end */\n"])
def test_trailing_comment_is_ignored(tail: str) -> None:
    assert prepare(VALID + tail)[1] == []
