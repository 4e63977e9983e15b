"""``attractor lint --format sarif``: diagnostics as a SARIF 2.1.0 log.

GitHub code scanning (``github/codeql-action/upload-sarif``) shows each result
on its DOT line. Every rule appears in ``tool.driver.rules`` with its help text
and the path of its section of docs/rules.md (the project has no fixed web
address, so no ``helpUri``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from attractor.errors import Diagnostic
from attractor.linter.catalog import RuleDoc, rule_docs
from attractor.version import __version__

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"

_LEVEL = {"error": "error", "warning": "warning", "info": "note", "style": "note"}


def _rule(doc: RuleDoc) -> dict[str, Any]:
    summary = doc.doc.split("\n\n", 1)[0].replace("\n", " ")
    return {
        "id": doc.name,
        "name": doc.name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": doc.doc},
        "help": {"text": f"{doc.doc}\n\nReference: {doc.anchor}"},
        "properties": {"docs": doc.anchor},
        "defaultConfiguration": {"level": _LEVEL[doc.severities[0]]},
    }


def _uri(file: str) -> str:
    """A relative path as a forward-slash URI reference (what code scanning matches)."""
    path = PurePath(file)
    return path.as_uri() if path.is_absolute() else path.as_posix()


def _result(d: Diagnostic, index: dict[str, int]) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": {"uri": _uri(d.file)}}
    if d.line > 0:
        location["region"] = {"startLine": d.line, "startColumn": max(d.column, 1)}
    message = d.message + (f"\nfix: {d.fix}" if d.fix else "")
    result: dict[str, Any] = {
        "ruleId": d.rule,
        "level": _LEVEL[d.severity],
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
    }
    if d.rule in index:
        result["ruleIndex"] = index[d.rule]
    return result


def to_sarif(found: Iterable[Diagnostic]) -> dict[str, Any]:
    """One SARIF log with one run of attractor's linter."""
    docs = rule_docs()
    index = {doc.name: i for i, doc in enumerate(docs)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "attractor",
                        "version": __version__,
                        "rules": [_rule(doc) for doc in docs],
                    }
                },
                "results": [_result(d, index) for d in found],
            }
        ],
    }
