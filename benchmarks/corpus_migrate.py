"""Migrate every pipeline of some projects of a folder in memory, and lint the result.

Usage: ``python benchmarks/corpus_migrate.py FOLDER --from kilroy PROJECT_DIR...``

For each ``*.dot`` file under FOLDER/PROJECT_DIR that parses: the error rules
lint finds before and after ``attractor migrate --from DIALECT`` (nothing is
written), and how many constructs migrate listed as not converted. Prints the
files that lint clean before and after, and the error rules left, with counts.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path

from attractor.dot.migrate import migrate_file
from attractor.errors import PipelineError
from attractor.linter.base import closed_handler_types
from attractor.linter.prepare import prepare


def errors(text: str, path: Path) -> Counter[str]:
    found = prepare(text, file=str(path), folder=path.parent)[1]
    return Counter(d.rule for d in found if d.is_error)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("projects", nargs="+")
    parser.add_argument("--from", dest="dialect", required=True)
    args = parser.parse_args()
    before_rules: Counter[str] = Counter()
    after_rules: Counter[str] = Counter()
    files = clean_before = clean_after = listed = 0
    here = Path.cwd()
    try:
        for project in args.projects:
            root = (args.folder / project).resolve()
            os.chdir(root)
            for path in sorted(root.rglob("*.dot")):
                try:
                    result = migrate_file(path, args.dialect)
                except PipelineError:
                    continue
                files += 1
                with closed_handler_types():
                    before = errors(path.read_text(encoding="utf-8"), path)
                    after = errors(result.text, path)
                before_rules += before
                after_rules += after
                clean_before += not before
                clean_after += not after
                listed += len(result.unconverted)
    finally:
        os.chdir(here)
    print(f"files that parse: {files}")
    print(f"lint clean: {clean_before} before, {clean_after} after")
    print(f"constructs listed as not converted: {listed}")
    print("error rules (diagnostics before -> after):")
    for rule in sorted(set(before_rules) | set(after_rules)):
        print(f"  {rule}: {before_rules[rule]} -> {after_rules[rule]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
