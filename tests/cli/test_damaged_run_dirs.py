"""Every file of a run directory, damaged every way: no traceback, no hang, exit 0 or 2.

See tests/cli/damagekit.py for the cases. CI runs every type and size of damage
for every file plus a few sampled wrong-type shapes per JSON file, in seconds;
``ATTRACTOR_FUZZ_SHAPES=50`` (and ``ATTRACTOR_FUZZ_SEED``) runs more of them.
The child process that runs the cases has its address space bounded and a
deadline, so the FIFO and ``/dev/zero`` cases are bounded in time and memory.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.damagekit import prepare_cases

REPO = Path(__file__).resolve().parents[2]
#: Address space of the child: several times what the commands need, far below
#: what reading /dev/zero or a sparse file whole would take.
MEMORY_LIMIT = 3 * 1024**3
#: For the whole batch (it takes seconds; a hang is caught per command sooner).
DEADLINE = 240


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _drive(spec: Path, cwd: Path) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.cli.damagekit", str(spec)],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_bounded,
    )
    try:
        out, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    finished = [line for line in lines if "code" in line]
    started = [line for line in lines if "start" in line]
    if len(finished) < len(started):
        last = started[-1]
        raise AssertionError(f"hung on {last['start']} ({last['command']}):\n{err[-3000:]}")
    assert proc.returncode == 0, err[-3000:]
    return finished


def _problem(result: dict[str, Any]) -> str | None:
    code, err = result["code"], result["err"]
    if result["crash"] or "Traceback" in err:
        return f"crashed: {err.strip()[-500:]}"
    if code not in (0, 2):
        return f"exit {code}: {err.strip()[-300:]}"
    lines = err.strip().splitlines()
    if code == 2 and not (lines and (lines[-1].startswith("error: ") or _LINT.search(lines[-1]))):
        return f"exit 2 without an error line: {err.strip()[-300:]}"
    return None


#: A run's pipeline copy that does not parse is reported as lint reports it.
_LINT = re.compile(r"^\d+ error\(s\), \d+ warning\(s\) in 1 file$")


@pytest.mark.slow
@pytest.mark.timeout(DEADLINE + 60)
def test_no_damaged_run_file_crashes_or_hangs_a_command(tmp_path: Path) -> None:
    from tests.cli.damagekit import make_template

    shapes = int(os.environ.get("ATTRACTOR_FUZZ_SHAPES", "3"))
    seed = int(os.environ.get("ATTRACTOR_FUZZ_SEED", "23"))
    template = make_template(tmp_path / "template")
    jobs = prepare_cases(template, tmp_path / "cases", shapes, seed)
    spec = tmp_path / "jobs.json"
    spec.write_text(json.dumps({"jobs": jobs, "pipeline": str(tmp_path / "template" / "p.dot")}))
    results = _drive(spec, tmp_path)
    assert len(results) == 5 * len(jobs)
    problems = [
        f"{r['case']} / {r['command']}: {problem}"
        for r in results
        if (problem := _problem(r)) is not None
    ]
    assert not problems, f"{len(problems)} of {len(results)}:\n" + "\n".join(problems)
    if os.environ.get("ATTRACTOR_FUZZ_SHOW"):  # every distinct message, to read them
        shown = {
            (r["code"], r["err"].strip().splitlines()[-1]) for r in results if r["err"].strip()
        }
        print("\n".join(f"{c} {line}" for c, line in sorted(shown)))


# -- the defects found by hand, each named ----------------------------------------------


def _template(workspace: Path) -> Path:
    from tests.cli.damagekit import make_template

    return make_template(workspace / "t")


def _one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ")
    for needle in needles:
        assert needle in line, line


def _subprocess(args: list[str], cwd: Path) -> tuple[int, str, str]:
    from tests.cli.runkit import finish, spawn

    return finish(spawn(args, cwd), timeout=60)


def test_a_fifo_results_file_neither_hangs_status_runs_nor_graph(workspace: Path) -> None:
    run = _template(workspace)
    (run / "results.jsonl").unlink()
    os.mkfifo(run / "results.jsonl")
    code, out, err = _subprocess(["runs", "--root", str(run.parent)], workspace)
    assert code == 0, err
    assert "damaged" in out.splitlines()[1]
    code, out, _ = _subprocess(["status", str(run)], workspace)
    assert code == 0
    assert "damaged" in out and "results.jsonl: cannot read: a FIFO" in out
    code, _, err = _subprocess(["resume", str(run)], workspace)
    _one_line(code, err, "results.jsonl: a FIFO (named pipe), not a regular file")


def test_a_fifo_branch_file_does_not_hang_resume(workspace: Path) -> None:
    run = _template(workspace)
    (run / "fork" / "branches" / "0.json").unlink()
    os.mkfifo(run / "fork" / "branches" / "0.json")
    code, _, err = _subprocess(["resume", str(run), "-q"], workspace)
    assert code == 0, err  # the branch whose result cannot be read runs again


def test_a_journal_linked_to_dev_zero_is_refused_without_reading_it(workspace: Path) -> None:
    run = _template(workspace)
    (run / "journal.jsonl").unlink()
    (run / "journal.jsonl").symlink_to("/dev/zero")
    code, out, _ = _subprocess(["status", str(run)], workspace)
    assert code == 0, out
    assert f"next: nothing to resume: its checkpoint cannot be read (attractor resume {run}" in out
    code, _, err = _subprocess(["resume", str(run)], workspace)
    _one_line(code, err, "journal.jsonl: a character device, not a regular file")


def test_a_lock_file_that_is_a_fifo_is_one_line(workspace: Path) -> None:
    run = _template(workspace)
    (run / ".lock").unlink()
    os.mkfifo(run / ".lock")
    code, out, _ = _subprocess(["status", str(run)], workspace)
    assert code == 0
    code, _, err = _subprocess(["resume", str(run)], workspace)
    _one_line(code, err, ".lock: a FIFO (named pipe), not a regular file; the run directory is")


def test_a_dangling_symlink_for_a_run_file_is_one_line(workspace: Path) -> None:
    run = _template(workspace)
    (run / "events.jsonl").unlink()
    (run / "events.jsonl").symlink_to(workspace / "elsewhere" / "events.jsonl")
    (workspace / "elsewhere").mkdir()
    code, _, err = _subprocess(["resume", str(run)], workspace)
    _one_line(code, err, "events.jsonl: a symbolic link to nothing")
    assert not (workspace / "elsewhere" / "events.jsonl").exists()  # not created through it


def _rewrite_rows(path: Path, **fields: Any) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**row, **fields}) + "\n" for row in rows))


def test_a_huge_journal_offset_resumes_from_the_checkpoint(workspace: Path) -> None:
    run = _template(workspace)
    data = json.loads((run / "checkpoint.json").read_text())
    (run / "checkpoint.json").write_text(json.dumps({**data, "journal_offset": 10**30}))
    code, out, err = _subprocess(["status", str(run)], workspace)
    assert code == 0, err
    code, _, err = _subprocess(["resume", str(run), "-q"], workspace)
    assert code == 0, err
