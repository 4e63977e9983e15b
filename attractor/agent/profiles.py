"""Provider tool profiles: the tool set and base instructions each model family knows.

Models are trained on their own vendor's agent tools: OpenAI models edit with
``apply_patch`` patches, Anthropic models with exact-string ``edit_file``, Gemini
models with gemini-cli's tools. A profile gives a session that set, the base
instructions that go with it, the provider's own instruction file name (read
beside AGENTS.md) and a context window to plan compaction against.

The profile follows the model's family, told by its name (``gpt-5``,
``claude-sonnet-4-5``, ``openrouter/openai/gpt-5``), whatever endpoint serves it:
an OpenAI model reached through a proxy or gateway still gets ``apply_patch``.
A node may name a profile itself (``tool_profile``, also through the
stylesheet). A model whose name says nothing gets its provider's profile,
except on an OpenAI-compatible server other than OpenAI's own (llama.cpp, vLLM,
Ollama...) and for the scripted backend, which get ``default``: the generic tool
set with exact-string editing, which small local models follow more reliably
than a patch grammar.
"""

from __future__ import annotations

from collections.abc import Callable

from attractor.agent.tools import Tool, ToolRegistry, default_registry
from attractor.agent.tools.files import file_tools
from attractor.agent.tools.patch import patch_tool
from attractor.agent.tools.read_many import read_many_tool
from attractor.agent.tools.search import search_tool
from attractor.agent.tools.shell import shell_tool
from attractor.errors import UsageError
from attractor.llm.factory import model_family
from attractor.valueclass import frozen

PROFILE_NAMES = ("openai", "anthropic", "gemini", "default")
UNIVERSAL_INSTRUCTIONS = "AGENTS.md"


@frozen
class ToolProfile:
    """One provider's tools and conventions.

    Attributes:
        id: ``openai``, ``anthropic``, ``gemini`` or ``default``.
        instructions: Base instructions for the system prompt.
        instruction_files: Project instruction file names read besides AGENTS.md.
        context_window: Tokens the model's context holds (a conservative figure).
        subagents: Offer ``spawn_agent``.
        build: Builds a registry of the profile's tools.
    """

    id: str
    instructions: str
    instruction_files: tuple[str, ...]
    context_window: int
    subagents: bool
    build: Callable[[], ToolRegistry]

    def registry(self) -> ToolRegistry:
        """The profile's tools, built once a process: a tool holds no state of a session
        and a registry is never changed in place (``with_tools`` and ``without`` make
        new ones), so every session shares one and its definitions are the same
        objects on every request (an adapter encodes them once)."""
        built = _BUILT.get(self.build)
        if built is None:
            built = _BUILT[self.build] = self.build()
        return built


#: The registries :meth:`ToolProfile.registry` built, by builder.
_BUILT: dict[Callable[[], ToolRegistry], ToolRegistry] = {}


def _file_tools() -> dict[str, Tool]:
    """The file tools by name (built once for a registry, not once a tool)."""
    return {tool.name: tool for tool in file_tools()}


def _openai_tools() -> ToolRegistry:
    files = _file_tools()
    tools = [
        files["read_file"],
        patch_tool(),
        files["write_file"],
        shell_tool(10.0),
        search_tool().renamed("grep"),
        files["glob"],
        files["list_dir"],
    ]
    return ToolRegistry(tools, aliases={"exec_command": "shell", "search_file": "grep"})


def _anthropic_tools() -> ToolRegistry:
    files = _file_tools()
    tools = [
        files["read_file"],
        files["write_file"],
        files["edit_file"],
        shell_tool(120.0),
        search_tool().renamed("grep"),
        files["glob"],
        files["list_dir"],
    ]
    return ToolRegistry(tools, aliases={"bash": "shell", "search_file": "grep"})


def _gemini_tools() -> ToolRegistry:
    files = _file_tools()
    tools = [
        files["read_file"],
        read_many_tool(),
        files["write_file"],
        files["edit_file"],
        shell_tool(10.0),
        search_tool().renamed("grep"),
        files["glob"],
        files["list_dir"],
    ]
    aliases = {"run_shell_command": "shell", "search_file": "grep", "replace": "edit_file"}
    return ToolRegistry(tools, aliases=aliases)


_OPENAI = (
    "Edit files with apply_patch: one patch may add, delete, update and move files, and "
    "each hunk carries about three unchanged lines of context around the change so it "
    "can be placed. Use write_file only for a new file when a patch would be clumsy. "
    "Read code before changing it, keep changes small and focused, and run the tests "
    "with the shell tool when there are any."
)
_ANTHROPIC = (
    "Read a file before you edit it. Prefer edit_file over write_file for an existing "
    "file: old_string must match the file exactly, including indentation, and occur "
    "exactly once, so include enough surrounding lines to make it unique (or set "
    "replace_all to change every occurrence). Prefer changing existing files to creating "
    "new ones. Use grep and glob to find code rather than shell commands."
)
_GEMINI = (
    "Look before you change: use glob, grep, read_file and read_many_files to understand "
    "the code and its conventions first. Change files with edit_file (exact text, which "
    "must occur once) or write_file for new files. Follow the project's instructions in "
    "AGENTS.md and GEMINI.md. Verify your changes with the project's own tests."
)
_DEFAULT = (
    "Read a file before you edit it; edit_file needs the exact text to replace, which "
    "must occur once."
)

PROFILES: dict[str, ToolProfile] = {
    "openai": ToolProfile(
        "openai", _OPENAI, (".codex/instructions.md",), 128_000, True, _openai_tools
    ),
    "anthropic": ToolProfile(
        "anthropic", _ANTHROPIC, ("CLAUDE.md",), 200_000, True, _anthropic_tools
    ),
    "gemini": ToolProfile("gemini", _GEMINI, ("GEMINI.md",), 1_000_000, True, _gemini_tools),
    "default": ToolProfile("default", _DEFAULT, (), 32_768, False, default_registry),
}


def choose_profile(
    provider: str,
    *,
    model: str | None = None,
    override: str | None = None,
    compatible_server: bool = False,
) -> ToolProfile:
    """The profile a node names, else the one of ``model``'s family, else ``provider``'s.

    ``compatible_server``: the model is reached through an OpenAI-compatible server
    other than OpenAI's own (llama.cpp, vLLM, Ollama...); a model there whose name
    tells no family gets ``default``.

    Raises:
        UsageError: ``override`` names no profile.
    """
    if override:
        key = override.strip().lower()
        if key not in PROFILES:
            raise UsageError(
                f"unknown tool_profile {override!r}: expected one of {', '.join(PROFILE_NAMES)}"
            )
        return PROFILES[key]
    family = model_family(model) if model else None
    if family is not None:
        return PROFILES[family]
    if provider == "openai" and compatible_server:
        return PROFILES["default"]
    return PROFILES.get(provider, PROFILES["default"])
