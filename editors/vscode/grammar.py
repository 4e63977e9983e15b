"""Write the attribute and shape patterns of the extension's grammar from the schema.

Usage: ``python editors/vscode/grammar.py [--check]``

The TextMate grammar (``syntaxes/attractor.tmLanguage.json``) highlights our
attribute names and node shapes; both lists come from ``attractor.dot.schema``,
so a new attribute is highlighted once this script has been run again.
``--check`` exits 1 when the committed grammar differs (tests/lsp runs it).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from attractor.dot.schema import SHAPE_TO_TYPE, SPECS

GRAMMAR = Path(__file__).parent / "syntaxes" / "attractor.tmLanguage.json"


def _alternation(words: Iterable[str]) -> str:
    # Longest first, so that a name is never matched by a shorter one it starts with.
    ordered = sorted(set(words), key=lambda w: (-len(w), w))
    return "|".join(re.escape(w) for w in ordered)


def generated() -> str:
    """The grammar file's text with the schema's attributes and shapes."""
    grammar = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    repository = grammar["repository"]
    repository["attributes"]["patterns"][0]["match"] = rf"(?<![\w.])({_alternation(SPECS)})(?=\s*=)"
    repository["values"]["patterns"][0]["match"] = rf"(?<==)\s*({_alternation(SHAPE_TO_TYPE)})\b"
    return json.dumps(grammar, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    text = generated()
    if "--check" in sys.argv[1:]:
        if GRAMMAR.read_text(encoding="utf-8") != text:
            print(f"{GRAMMAR.name} is out of date: run python editors/vscode/grammar.py")
            return 1
        return 0
    GRAMMAR.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
