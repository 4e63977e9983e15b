from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from attractor.cli.main import cli
from attractor.linter.catalog import GENERATED, find_rule, rule_docs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.dot"))
INVALID = sorted((ROOT / "examples" / "invalid").glob("*.dot"))
RULES_MD = ROOT / "docs" / "rules.md"
KEYS = {"file", "line", "column", "rule", "severity", "message", "node", "edge", "fix", "docs"}

BAD = """digraph G {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    w [prompt=p, max_turns=lots, timout=5m]
    start -> w -> exit
}
"""
WARN_ONLY = (
    "digraph G { start [shape=Mdiamond]; exit [shape=Msquare]; w [prompt=p, colour=1]\n"
    " start -> w -> exit }"
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["lint", *args])
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_examples_exist_and_lint_clean() -> None:
    assert len(EXAMPLES) >= 6
    code, out, _ = run("--strict", *map(str, EXAMPLES))
    assert code == 0, out
    assert out == f"no problems found in {len(EXAMPLES)} files\n"


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_each_invalid_example_reports_its_rule(path: Path) -> None:
    code, out, _ = run("--format", "json", "--strict", str(path))
    assert code == 1
    found = json.loads(out)
    doc = find_rule(path.stem)
    assert doc is not None, f"{path.name} is named after no rule"
    assert any(d["rule"] == path.stem and d["severity"] in doc.severities for d in found), found


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_every_diagnostic_has_a_fix_and_a_docs_anchor_that_exists(path: Path) -> None:
    anchors = {line[3:] for line in RULES_MD.read_text("utf-8").splitlines() if line[:3] == "## "}
    _, out, _ = run("--format", "json", str(path))
    for found in json.loads(out):
        assert found["fix"], found
        page, _, anchor = found["docs"].partition("#")
        assert page == "docs/rules.md" and anchor in anchors, found


def test_generated_reference_pages_match_the_code() -> None:
    # Regenerate with: python -m attractor.linter.catalog docs
    for name, render in GENERATED.items():
        assert (ROOT / "docs" / name).read_text("utf-8") == render(), f"docs/{name} drifted"


def test_every_rule_is_documented_once() -> None:
    names = [doc.name for doc in rule_docs()]
    assert len(names) == len(set(names))
    assert all(doc.doc.strip() for doc in rule_docs())


def test_explain_prints_the_rule_and_suggests_near_names() -> None:
    result = CliRunner().invoke(cli, ["explain", "shape_known"])
    assert result.exit_code == 0
    assert result.stdout.startswith("shape_known (error)\n")
    assert "Reference: docs/rules.md#shape_known" in result.stdout
    wrong = CliRunner().invoke(cli, ["explain", "shape_know"])
    assert wrong.exit_code == 2 and "did you mean shape_known?" in wrong.stderr
    listed = CliRunner().invoke(cli, ["explain", "--list"])
    assert {line.split()[0] for line in listed.stdout.splitlines()} == {
        doc.name for doc in rule_docs()
    }


def test_text_format_lines_fix_and_summary(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.dot", BAD)
    code, out, _ = run(path)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (
        f'{path}:4:18: error attribute_value: max_turns="lots": '
        "expected an integer from 1 to 500, or auto"
    )
    assert lines[1].startswith("    fix: ")
    assert (
        lines[2] == f"{path}:4:34: warning unknown_attribute: "
        "unknown attribute 'timout'; did you mean 'timeout'?"
    )
    assert lines[-1] == "1 error(s), 1 warning(s) in 1 file"


def test_json_format_is_one_array_with_exact_keys(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.dot", BAD + "")
    code, out, _ = run("--format", "json", path)
    assert code == 1
    found = json.loads(out)
    assert isinstance(found, list) and len(found) == 2
    for element in found:
        assert set(element) == KEYS
        assert element["severity"] in ("error", "warning", "info")
    assert found[0]["node"] == "w" and found[0]["edge"] is None


def test_json_edge_is_a_pair(tmp_path: Path) -> None:
    text = BAD.replace("start -> w -> exit", 'start -> w\n w -> exit [condition="x==1"]')
    found = json.loads(run("--format", "json", write(tmp_path, "e.dot", text))[1])
    (edge,) = [d for d in found if d["rule"] == "condition_syntax"]
    assert edge["edge"] == ["w", "exit"]


def test_syntax_error_is_a_diagnostic(tmp_path: Path) -> None:
    path = write(tmp_path, "s.dot", "digraph G {\n a -- b\n}")
    code, out, _ = run("--format", "json", path)
    assert code == 1
    assert json.loads(out) == [
        {
            "file": path,
            "line": 2,
            "column": 4,
            "rule": "syntax",
            "severity": "error",
            "message": "undirected edge '--' is not supported",
            "node": None,
            "edge": None,
            "fix": "use '->'",
            "docs": "docs/rules.md#syntax",
        }
    ]


def test_strict_fails_on_warnings(tmp_path: Path) -> None:
    path = write(tmp_path, "w.dot", WARN_ONLY)
    assert run(path)[0] == 0
    assert run("--strict", path)[0] == 1


def test_exit_2_for_unreadable_file_and_usage_errors(tmp_path: Path) -> None:
    good = write(tmp_path, "w.dot", WARN_ONLY)
    code, out, err = run(good, str(tmp_path / "missing.dot"))
    assert code == 2
    assert "missing.dot: cannot read" in err
    assert "in 1 file" in out  # the readable file is still reported
    assert run()[0] == 2
    assert run("--format", "xml", good)[0] == 2


def test_help_has_examples() -> None:
    code, out, _ = (
        CliRunner().invoke(cli, ["lint", "--help"]).exit_code,
        CliRunner().invoke(cli, ["lint", "--help"]).output,
        "",
    )
    assert code == 0
    assert "attractor lint --format json" in out and "Exit status" in out


def test_real_subprocess_and_lazy_imports(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.dot", BAD)
    probe = (
        "import sys\n"
        "from attractor.cli.main import cli\n"
        "try:\n"
        "    cli.main(['lint', '--format', 'json', sys.argv[1]])\n"
        "except SystemExit as exit:\n"
        "    heavy = [m for m in ('rich', 'openai', 'anthropic', 'httpx', 'anyio',\n"
        "             'attractor.engine.loop', 'attractor.engine.run',\n"
        "             'pygraphviz', 'starlette', 'uvicorn', 'attractor.server')\n"
        "             if m in sys.modules]\n"
        "    print('HEAVY', heavy, file=sys.stderr)\n"
        "    raise\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, path], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert {d["rule"] for d in json.loads(result.stdout)} == {
        "attribute_value",
        "unknown_attribute",
    }
    assert "HEAVY []" in result.stderr
    module = subprocess.run(
        [sys.executable, "-m", "attractor", "lint", path],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert module.returncode == 1 and "Traceback" not in module.stderr
    assert module.stdout.splitlines()[-1] == "1 error(s), 1 warning(s) in 1 file"
    version = subprocess.run(
        [sys.executable, "-m", "attractor", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert version.returncode == 0 and "attractor" in version.stdout
