"""Provider tool profiles: the tool set each model family gets, and how it is chosen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.agent.profiles import PROFILE_NAMES, PROFILES, choose_profile
from attractor.agent.tools import ToolContext
from attractor.dot.schema import TOOL_PROFILES
from attractor.errors import UsageError
from attractor.llm.types import ToolCall


@pytest.mark.parametrize(
    ("provider", "compatible", "expected"),
    [
        ("openai", False, "openai"),
        ("openai", True, "default"),  # llama.cpp, vLLM, Ollama...
        ("anthropic", False, "anthropic"),
        ("gemini", False, "gemini"),
        ("scripted", False, "default"),
    ],
)
def test_profile_follows_the_provider(provider: str, compatible: bool, expected: str) -> None:
    assert choose_profile(provider, compatible_server=compatible).id == expected


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-5", "openai"),
        ("o4-mini", "openai"),
        ("openai/gpt-5", "openai"),  # a gateway's route prefix
        ("openrouter/anthropic/claude-sonnet-4-5", "anthropic"),
        ("gemini-2.5-pro", "gemini"),
        ("qwen2.5-coder", "default"),  # the name says nothing: the server decides
    ],
)
def test_the_model_family_wins_over_the_endpoint(model: str, expected: str) -> None:
    # An OpenAI model reached through a proxy or gateway is still the model
    # trained on apply_patch.
    assert choose_profile("openai", model=model, compatible_server=True).id == expected


def test_a_node_override_wins_over_the_model_family() -> None:
    assert choose_profile("openai", model="gpt-5", override="default").id == "default"


def test_a_node_override_wins_and_a_bad_one_is_named() -> None:
    assert choose_profile("anthropic", override="OpenAI").id == "openai"
    assert choose_profile("openai", compatible_server=True, override="gemini").id == "gemini"
    with pytest.raises(UsageError, match="unknown tool_profile 'codex': expected one of"):
        choose_profile("openai", override="codex")


def test_lint_knows_the_same_profile_names() -> None:
    assert TOOL_PROFILES == PROFILE_NAMES


def test_each_profile_offers_its_providers_editing_tool() -> None:
    names = {key: PROFILES[key].registry().names() for key in PROFILE_NAMES}
    assert "apply_patch" in names["openai"] and "edit_file" not in names["openai"]
    assert "edit_file" in names["anthropic"] and "apply_patch" not in names["anthropic"]
    assert {"edit_file", "read_many_files"} <= set(names["gemini"])
    for key in ("openai", "anthropic", "gemini"):
        assert {"read_file", "write_file", "shell", "grep", "glob"} <= set(names[key])
        assert PROFILES[key].subagents
    assert names["default"] == [
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "glob",
        "search_file",
        "shell",
    ]
    assert not PROFILES["default"].subagents
    assert PROFILES["anthropic"].instruction_files == ("CLAUDE.md",)
    assert PROFILES["gemini"].instruction_files == ("GEMINI.md",)


def _run(profile: str, workdir: Path, name: str, **arguments: Any) -> tuple[str, bool]:
    registry = PROFILES[profile].registry()
    result = anyio.run(registry.execute, ToolCall("c", name, arguments), ToolContext(workdir))
    return result.output, result.is_error


def test_anthropic_edit_file_replaces_a_unique_string(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    output, error = _run(
        "anthropic", tmp_path, "edit_file", path="a.py", old_string="y = 2", new_string="y = 3"
    )
    assert not error and output == "replaced 1 occurrence(s) in a.py"
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 3\n"


def test_anthropic_edit_file_refuses_a_non_unique_match(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("v = 0\nv = 0\n")
    output, error = _run(
        "anthropic", tmp_path, "edit_file", path="a.py", old_string="v = 0", new_string="v = 1"
    )
    assert error and "old_string occurs 2 times in a.py" in output
    assert (tmp_path / "a.py").read_text() == "v = 0\nv = 0\n"
    output, error = _run(
        "anthropic", tmp_path, "edit_file", path="a.py", old_string="w = 9", new_string="w"
    )
    assert error and "old_string not found in a.py" in output


def test_provider_tool_names_are_accepted_as_aliases(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("needle here\n")
    output, error = _run("openai", tmp_path, "search_file", pattern="needle")
    assert not error and "f.txt:1: needle here" in output
    output, error = _run("anthropic", tmp_path, "bash", command="echo hi")
    assert not error and output.startswith("hi")


def test_gemini_read_many_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    output, error = _run("gemini", tmp_path, "read_many_files", paths=["a.txt", "b.txt", "../x"])
    assert not error
    assert "=== a.txt ===\n1 | alpha" in output and "=== b.txt ===\n1 | beta" in output
    assert "=== ../x ===\n[error:" in output and "outside" in output


def test_shell_default_timeout_follows_the_profile() -> None:
    shells = {key: PROFILES[key].registry().get("shell") for key in ("openai", "anthropic")}
    assert "default timeout is 10 seconds" in shells["openai"].definition.description  # type: ignore[union-attr]
    assert "default timeout is 120 seconds" in shells["anthropic"].definition.description  # type: ignore[union-attr]


def test_sessions_share_a_profiles_tools_and_none_changes_them() -> None:
    """A profile's registry is built once; what a session adds (MCP tools, spawn_agent)
    goes into a registry of its own."""
    first, second = PROFILES["openai"].registry(), PROFILES["openai"].registry()
    assert first is second
    before = first.names()
    read = first.get("read_file")
    assert read is not None
    extra = first.with_tools(read.renamed("peek"))
    assert extra.names() == [*before, "peek"]
    assert PROFILES["openai"].registry().names() == before
    assert first.definitions() == second.definitions()
