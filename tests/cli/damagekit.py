"""The damaged-run-directory fuzzer: every file of a run directory, broken every way.

A template run (a real simulate run, stopped inside its parallel node, so that
``resume`` reads branch files) is copied once per case; one of its files is
then replaced by a FIFO, a symlink (to the file moved aside, or to nothing), a directory, a link to
``/dev/zero``, an empty or a huge (sparse) file, truncated, garbled, nested too
deeply or given values of the wrong type. ``status``, ``status --json``,
``runs``, ``graph --run`` and last ``resume`` then run on it.

The cases run in one child process (:func:`main`, through ``python -m``), each
command in-process through click's runner, with an alarm per command; the
parent bounds the child's address space, so reading ``/dev/zero`` whole fails
with MemoryError instead of filling the machine, and kills it after a deadline,
so a hang fails the test naming the case instead of blocking the suite.
Each command prints one JSON line: ``{"case", "command", "code", "err", "crash"}``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PIPELINE = """\
digraph P {
  start [shape=Mdiamond]
  done  [shape=Msquare]
  plan  [prompt="Plan it"]
  fork  [shape=component]
  a     [prompt="A"]
  b     [prompt="B"]
  join  [shape=tripleoctagon]
  check [shape=parallelogram, tool_command="echo checked"]
  start -> plan -> fork
  fork -> a -> join
  fork -> b -> join
  join -> check -> done
}
"""

#: Every file of the template run directory the fuzzer breaks.
RUN_FILES = (
    "manifest.json",
    "checkpoint.json",
    "journal.jsonl",
    "pipeline.dot",
    "events.jsonl",
    "results.jsonl",
    "processes.jsonl",
    ".lock",
    "worker.json",
    "plan/status.json",
    "plan/response.md",
    "plan/prompt.md",
    "check/stdout.txt",
    "fork/branches/0.json",
    "fork/branches/1.progress.json",
    "fork/.attempt",
)
#: Files read as JSON (one document) or JSON lines.
JSON_FILES = ("manifest.json", "checkpoint.json", "worker.json", "plan/status.json")
JSONL_FILES = ("journal.jsonl", "events.jsonl", "results.jsonl", "processes.jsonl")
JSON_FILES += ("fork/branches/0.json", "fork/branches/1.progress.json", "fork/.attempt")

#: Values of the wrong type for any field.
WRONG = ("x", 10**30, -1, 1.5, None, True, [], {}, [1, "x"], {"a": {"b": []}})
#: Over every size limit of attractor.fileio (sparse: no disk space used).
HUGE = 512 * 1024 * 1024 + 1
#: Seconds one command may take before the alarm calls it a hang.
COMMAND_ALARM = 20


def make_template(workspace: Path) -> Path:
    """A run of :data:`PIPELINE` stopped inside ``fork`` after branch ``a`` finished."""
    from attractor.store.journal import JOURNAL
    from tests.cli.runkit import invoke, write

    write(workspace / "p.dot", PIPELINE)
    # In the template's folder, not the current one (the project's own repository).
    args = ["--logs-dir", str(workspace / "run"), "--workdir", str(workspace), "-q"]
    result = invoke(["run", str(workspace / "p.dot"), *args])
    assert result.exit_code == 0, result.output
    run = workspace / "run"
    lines = (run / JOURNAL).read_bytes().splitlines(keepends=True)
    (run / JOURNAL).write_bytes(b"".join(lines[:2]))  # start, plan: the second one replayed
    data = json.loads((run / "checkpoint.json").read_text())
    data.update(
        status="interrupted",
        current_node="plan",
        next_node="plan",
        completed_nodes=["start"],
        node_outcomes={"start": "success"},
        node_visits={"start": 1},
        node_results_count=1,
        journal_seq=1,
        journal_offset=len(lines[0]),
    )
    (run / "checkpoint.json").write_text(json.dumps(data))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(status="interrupted", current_node="fork")
    (run / "manifest.json").write_text(json.dumps(manifest))
    branch = json.loads((run / "fork" / "branches" / "1.json").read_text())
    (run / "fork" / "branches" / "1.json").unlink()
    progress = {
        "branch": branch["id"],
        "next_node": branch["id"],
        "completed": [],
        "statuses": {},
        "visits": {},
        "retries": {},
        "context": {"outcome": "success"},
        "logs": [],
    }
    write(run / "fork" / "branches" / "1.progress.json", json.dumps(progress))
    write(run / "fork" / ".attempt", json.dumps({"visit": 1, "attempt": 1}))
    write(run / "worker.json", json.dumps({"node_id": "n1", "host": "h1"}))
    return run


# -- how a file is broken ----------------------------------------------------------

Breaker = Callable[[Path], None]


def _replace(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)


def _fifo(path: Path) -> None:
    _replace(path)
    os.mkfifo(path)


def _symlink(path: Path) -> None:
    """The file moved out of the run directory, a symbolic link left in its place."""
    moved = path.parent / f".moved-{path.name}"
    if path.exists():
        path.rename(moved)
    else:
        moved.write_text("")
    path.symlink_to(moved)


def _dangling(path: Path) -> None:
    _replace(path)
    path.symlink_to(path.parent / "nowhere" / "gone")


def _directory(path: Path) -> None:
    _replace(path)
    path.mkdir()
    (path / "inside").write_text("x")


def _dev_zero(path: Path) -> None:
    _replace(path)
    path.symlink_to("/dev/zero")


def _empty(path: Path) -> None:
    _replace(path)
    path.write_bytes(b"")


def _huge(path: Path) -> None:
    _replace(path)
    with path.open("wb") as fh:
        fh.truncate(HUGE)


def _huge_line(path: Path) -> None:
    """The file as it was, then a line with no end as long as every limit."""
    old = path.read_bytes() if path.is_file() else b""
    with path.open("wb") as fh:
        fh.write(old + b'{"type": "x", "pad": "')
        fh.truncate(HUGE)


def _truncated(path: Path) -> None:
    data = path.read_bytes() if path.is_file() else b""
    path.write_bytes(data[: max(1, len(data) * 2 // 3)])


def _garbage(path: Path) -> None:
    path.write_bytes(b"\xff\xfe\x00garbage\x80\n{\n]\n\xc3(\n")


def _deep(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")


def _deep_line(path: Path) -> None:
    old = path.read_text() if path.is_file() else ""
    path.write_text(old + '{"type": "stage_started", "x": ' + "[" * 50_000 + "]" * 50_000 + "}\n")


BREAKERS: dict[str, Breaker] = {
    "fifo": _fifo,
    "symlink": _symlink,
    "dangling-symlink": _dangling,
    "directory": _directory,
    "dev-zero": _dev_zero,
    "empty": _empty,
    "huge": _huge,
    "huge-line": _huge_line,
    "truncated": _truncated,
    "garbage": _garbage,
    "deep": _deep,
    "deep-line": _deep_line,
}


def wrong_types(path: Path, rng: random.Random) -> None:
    """Give one field of the document (or of each JSON line) a value of another type."""
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".jsonl"):
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        out = [json.dumps(_mutated(row, rng)) for row in rows]
        path.write_text("\n".join(out) + "\n")
    else:
        path.write_text(json.dumps(_mutated(json.loads(text), rng)))


def _mutated(value: Any, rng: random.Random) -> Any:
    if not isinstance(value, dict) or not value or rng.random() < 0.1:
        return rng.choice(WRONG)
    key = rng.choice(sorted(value))
    inner = value[key]
    if isinstance(inner, dict) and inner and rng.random() < 0.5:
        return {**value, key: _mutated(inner, rng)}
    return {**value, key: rng.choice(WRONG)}


#: Damage aimed at defects found by hand (issue 23 item 10).
def targeted() -> dict[str, tuple[str, Callable[[Any], Any]]]:
    def field(name: str, value: Any) -> Callable[[Any], Any]:
        return lambda data: {**data, name: value}

    return {
        "huge-journal-offset": ("checkpoint.json", field("journal_offset", 10**30)),
        "negative-journal-offset": ("checkpoint.json", field("journal_offset", -5)),
        "usage-is-a-string": ("results.jsonl", field("usage", "lots")),
        "usage-is-a-number": ("results.jsonl", field("usage", 12)),
        "attempt-is-a-string": ("events.jsonl", field("attempt", "second")),
        "tokens-are-strings": ("events.jsonl", field("input_tokens", "many")),
        "manifest-usage-is-a-list": ("manifest.json", field("usage", [1, 2])),
        "source-file-is-a-number": ("manifest.json", field("source_file", 7)),
        "started-at-is-text": ("manifest.json", field("started_at", "yesterday")),
        "visit-is-a-string": ("fork/.attempt", field("visit", "one")),
    }


def _apply_targeted(path: Path, change: Callable[[Any], Any]) -> None:
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".jsonl"):
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        path.write_text("".join(json.dumps(change(r)) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(change(json.loads(text))))


def cases(shapes_per_file: int, seed: int) -> Iterator[tuple[str, str, str]]:
    """``(case id, file, how)``: every type and size for every file, plus sampled shapes."""
    for name in RUN_FILES:
        for how in BREAKERS:
            if how in ("deep-line", "huge-line") and name not in JSONL_FILES:
                continue
            yield f"{name}:{how}", name, how
    for name in (*JSON_FILES, *JSONL_FILES):
        for n in range(shapes_per_file):
            yield f"{name}:types-{seed}-{n}", name, f"types-{seed}-{n}"
    for label, (name, _) in targeted().items():
        yield f"{name}:{label}", name, label


def break_file(run: Path, name: str, how: str) -> None:
    path = run / name
    if how in BREAKERS:
        BREAKERS[how](path)
    elif how.startswith("types-"):
        _, seed, n = how.split("-")
        wrong_types(path, random.Random(f"{seed}-{n}-{name}"))
    else:
        _apply_targeted(path, targeted()[how][1])


def prepare_cases(
    template: Path, base: Path, shapes_per_file: int, seed: int
) -> list[dict[str, str]]:
    """One copy of the template per case, broken; what the driver needs to run them."""
    jobs = []
    for number, (case, name, how) in enumerate(cases(shapes_per_file, seed)):
        root = base / f"c{number}"
        run = root / "run"
        shutil.copytree(template, run, symlinks=True)
        break_file(run, name, how)
        jobs.append({"case": case, "root": str(root), "run": str(run)})
    return jobs


# -- the driver (a child process) ----------------------------------------------------


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


def _commands(job: dict[str, str], pipeline: str) -> list[tuple[str, list[str]]]:
    run, root = job["run"], job["root"]
    return [
        ("status", ["status", run]),
        ("status-json", ["status", run, "--json"]),
        ("runs", ["runs", "--root", root]),
        ("graph-run", ["graph", pipeline, "--run", run, "-o", f"{root}/g.svg"]),
        ("resume", ["resume", run, "-q"]),
    ]


def main() -> None:
    """Run the jobs of the JSON file ``argv[1]``; one result line per command on stdout."""
    from click.testing import CliRunner

    from attractor.cli.main import cli
    from tests.cli.runkit import clean_env

    spec = json.loads(Path(sys.argv[1]).read_text())
    signal.signal(signal.SIGALRM, _alarm)
    out = sys.stdout
    for job in spec["jobs"]:
        for command, args in _commands(job, spec["pipeline"]):
            out.write(json.dumps({"start": job["case"], "command": command}) + "\n")
            out.flush()
            signal.alarm(COMMAND_ALARM)
            try:
                result = CliRunner().invoke(cli, args, env=clean_env())
                crash = result.exception is not None and not isinstance(
                    result.exception, SystemExit
                )
                code, err = result.exit_code, result.stderr
                if crash:
                    err += f"\n{type(result.exception).__name__}: {result.exception}"
            except _Hang:
                code, err, crash = -1, f"no exit within {COMMAND_ALARM}s", True
            finally:
                signal.alarm(0)
            line = {"case": job["case"], "command": command, "code": code, "err": err}
            out.write(json.dumps({**line, "crash": crash}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
