"""``attractor migrate FILE --from kilroy`` through the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.cli.runkit import invoke, write

KILROY = """digraph k {
  start [shape=Mdiamond]
  exit [shape=Msquare]
  build [shape=parallelogram tool_command="make" timeout=300]
  check [prompt="Decide. Write to $KILROY_STAGE_STATUS_PATH: status=needs_fix."
         timeout="1200"]
  fix [prompt="Fix it" timeout="90s"]
  start -> build -> check
  check -> fix [condition="outcome=needs_fix"]
  check -> exit [condition="outcome=succeeded"]
  fix -> exit
}
"""


def test_migrate_converts_bare_second_timeouts_and_lists_the_rest(workspace: Path) -> None:
    write(workspace / "k.dot", KILROY)
    result = invoke(["migrate", "k.dot", "--from", "kilroy"])
    assert result.exit_code == 1  # converted, with constructs left to change by hand
    out = result.stdout
    assert 'build [shape=parallelogram, tool_command="make", timeout=300s]' in out
    assert 'timeout="1200s"' in out and 'timeout="90s"' in out
    assert 'condition="outcome=success"' in out  # the alias in canonical form
    # The prompt is kept byte for byte.
    assert '"Decide. Write to $KILROY_STAGE_STATUS_PATH: status=needs_fix."' in out
    lines = result.stderr.splitlines()
    assert (
        lines[0]
        == "converted: 2 timeout(s) in bare seconds written with a unit (timeout=300 -> 300s)"
    )
    assert lines[1].startswith("k.dot:5:") and "$KILROY_STAGE_STATUS_PATH" in lines[1]
    assert lines[2].startswith("k.dot:9:") and "routes on outcome=needs_fix" in lines[2]
    assert 'write condition="preferred_label=needs_fix"' in lines[2]
    assert lines[-1].startswith("2 construct(s) could not be converted")
    # Before, lint refused the timeouts; after, only what migrate listed is left.
    write(workspace / "m.dot", out)
    before = invoke(["lint", "k.dot"]).stdout
    after = invoke(["lint", "m.dot"]).stdout
    assert "attribute_value" in before and "attribute_value" not in after
    assert "condition_syntax" in after


def test_migrate_write_rewrites_the_file_and_bad_input_is_one_line(workspace: Path) -> None:
    clean = KILROY.replace("outcome=needs_fix", "outcome=fail").replace(
        "$KILROY_STAGE_STATUS_PATH", "x"
    )
    path = write(workspace / "k.dot", clean)
    result = invoke(["migrate", "k.dot", "--from", "kilroy", "--write"])
    assert result.exit_code == 0, result.stderr
    assert "timeout=300s" in path.read_text()
    assert invoke(["lint", "k.dot"]).exit_code == 0
    broken = invoke(["migrate", "nothing.dot", "--from", "kilroy"])
    assert broken.exit_code == 2 and broken.stderr.startswith("attractor migrate: nothing.dot")
    assert len(broken.stderr.splitlines()) == 1
    unknown = invoke(["migrate", "k.dot", "--from", "elsewhere"])
    assert unknown.exit_code == 2


def test_fractional_seconds_become_milliseconds_and_a_zero_timeout_is_listed(
    workspace: Path,
) -> None:
    write(
        workspace / "k.dot",
        """digraph k {
  start [shape=Mdiamond]
  exit [shape=Msquare]
  a [prompt="a" timeout=1.5]
  b [prompt="b" timeout="0"]
  start -> a -> b -> exit
}
""",
    )
    result = invoke(["migrate", "k.dot", "--from", "kilroy"])
    assert result.exit_code == 1
    assert 'a [prompt="a", timeout=1500ms]' in result.stdout
    assert result.stderr.splitlines()[1] == (
        "k.dot:5:17: timeout=0 has no duration here (a timeout is longer than zero); remove "
        "it for no timeout, or write the longest the stage may take (timeout=15m)"
    )
    write(workspace / "m.dot", result.stdout)
    lint = invoke(["lint", "m.dot"]).stdout
    assert 'timeout="1.5"' not in lint and 'timeout="1500ms"' not in lint
    assert 'timeout="0"' in lint  # left as written, for the author to decide
