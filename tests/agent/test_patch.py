"""apply_patch against real files: every operation, and refusals that change nothing."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from attractor.agent.profiles import PROFILES
from attractor.agent.tools import ToolContext, ToolResult
from attractor.llm.types import ToolCall

MAIN = "def main():\n    print('Hello')\n    return 0\n\n\nif __name__ == '__main__':\n    main()\n"


def _apply(workdir: Path, patch: str) -> ToolResult:
    registry = PROFILES["openai"].registry()
    call = ToolCall("c1", "apply_patch", {"patch": patch})
    return anyio.run(registry.execute, call, ToolContext(workdir))


def _snapshot(workdir: Path) -> dict[str, str]:
    return {str(p.relative_to(workdir)): p.read_text() for p in workdir.rglob("*") if p.is_file()}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    workdir = tmp_path / "work"
    (workdir / "src").mkdir(parents=True)
    (workdir / "src" / "main.py").write_text(MAIN)
    (workdir / "old.txt").write_text("bye\n")
    return workdir


def test_update_with_context_and_anchor(work: Path) -> None:
    result = _apply(
        work,
        "*** Begin Patch\n*** Update File: src/main.py\n@@ def main():\n"
        "     print('Hello')\n-    return 0\n+    print('World')\n+    return 1\n*** End Patch\n",
    )
    assert not result.is_error, result.output
    assert result.output == "patch applied:\nM src/main.py"
    text = (work / "src" / "main.py").read_text()
    assert "    print('World')\n    return 1\n" in text and "return 0" not in text
    assert text.endswith("    main()\n")


def test_add_delete_and_move_in_one_patch(work: Path) -> None:
    result = _apply(
        work,
        "*** Begin Patch\n"
        "*** Add File: pkg/new.py\n+X = 1\n+Y = 2\n"
        "*** Delete File: old.txt\n"
        "*** Update File: src/main.py\n*** Move to: src/app.py\n"
        "@@\n-    return 0\n+    return 2\n"
        "*** End Patch",
    )
    assert not result.is_error, result.output
    assert result.output.splitlines()[1:] == [
        "A pkg/new.py",
        "D old.txt",
        "M src/main.py -> src/app.py",
    ]
    assert (work / "pkg" / "new.py").read_text() == "X = 1\nY = 2\n"
    assert not (work / "old.txt").exists() and not (work / "src" / "main.py").exists()
    assert "return 2" in (work / "src" / "app.py").read_text()


def test_multi_hunk_update_and_loose_whitespace(work: Path) -> None:
    (work / "conf.py").write_text(
        "A = 1\nB = 2\n\n\ndef load():\n    debug = False  \n    return debug\n"
    )
    result = _apply(
        work,
        "*** Begin Patch\n*** Update File: conf.py\n@@\n-A = 1\n+A = 10\n"
        "@@ def load():\n-    debug = False\n+    debug = True\n*** End Patch\n",
    )
    assert not result.is_error, result.output
    assert (work / "conf.py").read_text() == (
        "A = 10\nB = 2\n\n\ndef load():\n    debug = True\n    return debug\n"
    )


def test_end_of_file_hunk_appends(work: Path) -> None:
    (work / "list.txt").write_text("one\ntwo\n")
    result = _apply(
        work,
        "*** Begin Patch\n*** Update File: list.txt\n@@\n two\n+three\n"
        "*** End of File\n*** End Patch",
    )
    assert not result.is_error, result.output
    assert (work / "list.txt").read_text() == "one\ntwo\nthree\n"


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        (
            "*** Update File: src/main.py\n@@\n-x\n+y\n*** End Patch",
            "must start with the line '*** Begin Patch'",
        ),
        ("*** Begin Patch\n*** Delete File: old.txt\n", "must end with the line '*** End Patch'"),
        ("*** Begin Patch\n*** End Patch", "holds no file operations"),
        (
            "*** Begin Patch\n*** Frobnicate: x\n*** End Patch",
            "patch line 2: expected '*** Add File: '",
        ),
        (
            "*** Begin Patch\n*** Add File: a.txt\nno plus\n*** End Patch",
            "patch line 3: every line of an added file must start with '+'",
        ),
        ("*** Begin Patch\n*** Update File: src/main.py\n*** End Patch", "has no hunks"),
        (
            "*** Begin Patch\n*** Update File: src/main.py\n@@\n context only\n*** End Patch",
            "must add or remove at least one line",
        ),
        (
            "*** Begin Patch\n*** Update File: src/main.py\n@@\n~odd\n*** End Patch",
            "a hunk line must start with ' '",
        ),
    ],
)
def test_malformed_patches_are_refused_and_change_nothing(
    work: Path, patch: str, needle: str
) -> None:
    before = _snapshot(work)
    result = _apply(work, patch)
    assert result.is_error
    assert needle in result.output
    assert result.output.endswith("No file was changed.")
    assert _snapshot(work) == before


def test_a_hunk_that_does_not_fit_changes_no_file_at_all(work: Path) -> None:
    """The first file's hunk fits, the second's does not: neither file is written."""
    (work / "b.txt").write_text("alpha\nbeta\n")
    before = _snapshot(work)
    result = _apply(
        work,
        "*** Begin Patch\n*** Update File: src/main.py\n@@\n-    return 0\n+    return 5\n"
        "*** Add File: created.txt\n+new\n"
        "*** Update File: b.txt\n@@\n-gamma\n+delta\n*** End Patch",
    )
    assert result.is_error
    assert "hunk 1 of b.txt: the context and removed lines were not found" in result.output
    assert "gamma" in result.output and "No file was changed." in result.output
    assert _snapshot(work) == before


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        (
            "*** Begin Patch\n*** Update File: missing.py\n@@\n-a\n+b\n*** End Patch",
            "missing.py: no such file",
        ),
        ("*** Begin Patch\n*** Delete File: missing.py\n*** End Patch", "cannot delete missing.py"),
        (
            "*** Begin Patch\n*** Add File: old.txt\n+x\n*** End Patch",
            "cannot add old.txt: it already exists",
        ),
        ("*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch", "outside"),
        (
            "*** Begin Patch\n*** Delete File: old.txt\n*** Delete File: ./old.txt\n*** End Patch",
            "more than once",
        ),
        (
            "*** Begin Patch\n*** Update File: src/main.py\n"
            "@@ def nowhere():\n-x\n+y\n*** End Patch",
            "'@@ def nowhere():' line was not found",
        ),
    ],
)
def test_patches_that_cannot_apply_are_refused(work: Path, patch: str, needle: str) -> None:
    before = _snapshot(work)
    result = _apply(work, patch)
    assert result.is_error
    assert needle in result.output
    assert _snapshot(work) == before
    assert not (work.parent / "escape.txt").exists()


def test_patch_through_a_symlink_out_of_the_workdir_is_refused(work: Path) -> None:
    outside = work.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep\n")
    (work / "link").symlink_to(outside)
    result = _apply(
        work, "*** Begin Patch\n*** Update File: link/secret.txt\n@@\n-keep\n+gone\n*** End Patch"
    )
    assert result.is_error and "outside" in result.output
    assert (outside / "secret.txt").read_text() == "keep\n"


def test_file_modes_are_kept(work: Path) -> None:
    script = work / "run.sh"
    script.write_text("#!/bin/sh\necho a\n")
    script.chmod(0o755)
    result = _apply(
        work, "*** Begin Patch\n*** Update File: run.sh\n@@\n-echo a\n+echo b\n*** End Patch"
    )
    assert not result.is_error, result.output
    assert script.stat().st_mode & 0o777 == 0o755
    assert script.read_text() == "#!/bin/sh\necho b\n"


def test_blank_lines_between_operations_are_separators(work: Path) -> None:
    result = _apply(
        work,
        "*** Begin Patch\n*** Add File: a.txt\n+a\n\n*** Update File: old.txt\n@@\n-bye\n+hi\n"
        "\n\n*** End Patch",
    )
    assert not result.is_error, result.output
    assert (work / "a.txt").read_text() == "a\n" and (work / "old.txt").read_text() == "hi\n"


def test_crlf_line_ends_and_a_missing_final_newline_are_kept(work: Path) -> None:
    (work / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (work / "bare.txt").write_bytes(b"alpha\nbeta")
    result = _apply(
        work,
        "*** Begin Patch\n*** Update File: win.txt\n@@\n one\n-two\n+2\n"
        "*** Update File: bare.txt\n@@\n-beta\n+BETA\n*** End Patch",
    )
    assert not result.is_error, result.output
    assert (work / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"
    assert (work / "bare.txt").read_bytes() == b"alpha\nBETA"
