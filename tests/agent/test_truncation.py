"""Tool output truncation: characters first, then lines, always with a note."""

from __future__ import annotations

from attractor.agent.truncation import Limits, limits_for, truncate_output


def test_short_output_is_untouched() -> None:
    assert truncate_output("a\nb", Limits(10, 5)) == "a\nb"


def test_characters_are_cut_from_the_middle_with_a_note() -> None:
    text = "A" * 50 + "B" * 50
    cut = truncate_output(text, Limits(20))
    assert cut.startswith("A" * 10) and cut.endswith("B" * 10)
    assert "80 characters removed" in cut and "tools.log" in cut


def test_two_huge_lines_are_still_cut_by_characters() -> None:
    text = "x" * 100_000 + "\n" + "y" * 100_000
    cut = truncate_output(text, Limits(1000, max_lines=50))
    assert len(cut) < 1300


def test_lines_are_cut_after_characters() -> None:
    text = "\n".join(f"l{n}" for n in range(100))
    cut = truncate_output(text, Limits(10_000, max_lines=10)).split("\n")
    assert cut[:5] == ["l0", "l1", "l2", "l3", "l4"]
    assert cut[-5:] == ["l95", "l96", "l97", "l98", "l99"]
    assert "90 lines omitted" in cut[5]


def test_each_tool_has_limits() -> None:
    assert limits_for("shell").max_lines == 256
    assert limits_for("unknown_tool").max_chars > 0
