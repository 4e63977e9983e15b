"""search_file regexes run on RE2: linear time, and a clear error for what RE2 lacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from attractor.agent.tools import ToolContext, ToolResult, default_registry
from attractor.llm.types import ToolCall

# Seconds. Python's backtracking `re` needs days for the evil pattern below; RE2
# needs milliseconds. The margin is for a loaded CI machine.
PROMPT = 15.0
EVIL = "(a+)+$"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


async def _call(workdir: Path, name: str, **arguments: Any) -> ToolResult:
    return await default_registry().execute(ToolCall("c1", name, arguments), ToolContext(workdir))


SEARCH_IN_A_SUBPROCESS = """
import sys
from pathlib import Path

import anyio

from attractor.agent.tools import ToolContext, default_registry
from attractor.llm.types import ToolCall


async def main():
    call = ToolCall("c1", "search_file", {"pattern": sys.argv[2], "regex": True})
    result = await default_registry().execute(call, ToolContext(Path(sys.argv[1])))
    print(result.output)


anyio.run(main)
"""


def test_an_evil_regex_returns_promptly_through_the_threaded_tool(
    tmp_path: Path, workdir: Path
) -> None:
    # In a subprocess with a timeout: a regression must fail the test, not hang the suite.
    (workdir / "small.txt").write_text("a" * 40 + "!\n")
    (workdir / "large.txt").write_text(("a" * 100_000 + "!\n") * 50 + "aaaa\n")
    script = tmp_path / "search.py"
    script.write_text(SEARCH_IN_A_SUBPROCESS)
    done = subprocess.run(
        [sys.executable, str(script), str(workdir), EVIL],
        capture_output=True,
        text=True,
        timeout=PROMPT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "large.txt:51: aaaa\n"


@pytest.mark.anyio
async def test_the_evil_pattern_still_finds_the_lines_it_matches(workdir: Path) -> None:
    (workdir / "f.txt").write_text("aaa\nbaa!\nAAA\n")
    found = await _call(workdir, "search_file", pattern=EVIL, regex=True)
    assert found.output == "f.txt:1: aaa"
    folded = await _call(workdir, "search_file", pattern=EVIL, regex=True, ignore_case=True)
    assert folded.output.splitlines() == ["f.txt:1: aaa", "f.txt:3: AAA"]


@pytest.mark.anyio
async def test_ignore_case_works_for_literal_and_regex_patterns(workdir: Path) -> None:
    (workdir / "f.txt").write_text("Hello World\nhello.world\nÉté\n")
    literal = await _call(workdir, "search_file", pattern="HELLO.", ignore_case=True)
    assert literal.output == "f.txt:2: hello.world"
    regex = await _call(workdir, "search_file", pattern=r"^hello\W", regex=True, ignore_case=True)
    assert regex.output.splitlines() == ["f.txt:1: Hello World", "f.txt:2: hello.world"]
    unicode = await _call(workdir, "search_file", pattern="été", ignore_case=True)
    assert unicode.output == "f.txt:3: Été"
    exact = await _call(workdir, "search_file", pattern="hello")
    assert exact.output == "f.txt:2: hello.world"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("pattern", "feature"),
    [
        (r"(a)\1", r"a backreference (\1)"),
        (r"(?P<q>')x(?P=q)", "a named backreference (?P=name)"),
        (r"foo(?=bar)", "lookahead (?=...)"),
        (r"foo(?!bar)", "negative lookahead (?!...)"),
        (r"(?<=x)y", "lookbehind (?<=...)"),
        (r"(?<!x)y", "negative lookbehind (?<!...)"),
        (r"a++", "a possessive quantifier (++)"),
        (r"end\Z", r"\Z (write \z for the end of the line)"),
    ],
)
async def test_what_re2_does_not_support_is_named_with_a_way_out(
    workdir: Path, pattern: str, feature: str
) -> None:
    (workdir / "f.txt").write_text("foobar\n")
    result = await _call(workdir, "search_file", pattern=pattern, regex=True)
    assert result.is_error
    assert f"uses {feature}, which is not supported" in result.output
    assert "rewrite the pattern" in result.output


@pytest.mark.anyio
async def test_a_plain_syntax_error_is_still_an_invalid_regular_expression(
    workdir: Path,
) -> None:
    result = await _call(workdir, "search_file", pattern="[z-a]", regex=True)
    assert result.is_error and "invalid regular expression '[z-a]'" in result.output
    assert "not supported" not in result.output
