"""The words the agent loop says to the model, in one place."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attractor.agent.project_context import ProjectContext


def system_prompt(
    *,
    workdir: Path,
    max_turns: int,
    tool_names: list[str],
    choices: tuple[str, ...] | None = None,
    instructions: str = "",
    context: ProjectContext | None = None,
) -> str:
    """The system prompt: role, working directory, tools, the turn budget and how to report.

    ``choices`` is None when the session takes no outcome report, else the
    stage's outgoing edge labels (possibly none). ``instructions`` are the tool
    profile's. ``context`` adds the environment block (early: a small model
    tends to echo what the prompt ends with) and the project's own instruction
    files (last, so they weigh most).
    """
    tools = ", ".join(tool_names) if tool_names else "none"
    environment = f"{context.environment}\n\n" if context is not None else ""
    text = (
        "You are a coding agent working on one stage of an automated pipeline. "
        "Complete the task you are given using the tools available, then answer "
        "with a short plain-text report and no tool calls to finish.\n\n"
        f"{environment}"
        f"Working directory: {workdir}\n"
        "Every path you pass to a tool is relative to it; paths outside it are refused.\n"
        f"Tools: {tools}\n\n"
        f"Turn budget: you may make at most {max_turns} model requests for this task. "
        "Each reply you send counts as one turn, whether or not it calls tools. "
        "Plan so the work fits, and stop as soon as the task is done."
    )
    if instructions:
        text += "\n\n" + instructions
    if choices is not None:
        text += "\n\n" + outcome_instructions(choices)
    if context is not None and context.instructions:
        text += (
            "\n\nProject instructions (from the files below; deeper directories take "
            "precedence):\n\n" + context.instructions
        )
    return text


def outcome_instructions(choices: tuple[str, ...]) -> str:
    """How the model says how its stage ended, and which way the pipeline goes."""
    text = (
        "Outcome: when you are done, call report_outcome with outcome success, "
        "partial_success, retry or fail, and notes saying why. Without tools, end your "
        'last message with a JSON object instead, e.g. {"outcome": "success", "notes": "..."}. '
        "If you report nothing, the stage counts as a success."
    )
    if choices:
        listed = "; ".join(choices)
        text += (
            f"\nThis stage decides where the pipeline goes next. Choose one of these "
            f"labels as preferred_label: {listed}."
        )
    return text


def budget_note(*, used: int, max_turns: int) -> str:
    """The reminder sent once 80% of the budget is used."""
    remaining = max_turns - used
    return (
        f"Budget check: {used} of your {max_turns} turns are used and {remaining} "
        f"remain. Finish the most important part of the task first and wrap up soon."
    )


def final_turn_note(*, reason: str = "turn budget") -> str:
    """The note sent with the last request, when tools are withheld."""
    return (
        f"This is your last turn: the {reason} is spent and tools are no longer "
        "available. Reply in plain text with a summary: what you did, what is still "
        "left to do, and whether the task is complete. You may end it with a JSON "
        'outcome object such as {"outcome": "partial_success", "notes": "..."}.'
    )


def reflection_message(*, used: int, remaining: int, sprint_limit: int) -> str:
    """The message of a forced reflection turn (tools withheld for this one reply)."""
    return (
        f"Pause for a checkpoint: this comes after every {sprint_limit} working turns. "
        f"{used} turns are used and {remaining} remain. Tools are not "
        "available for this reply. Please:\n"
        "1. Sum up what is finished and what is still open.\n"
        "2. Say honestly whether your current approach is working.\n"
        "3. If the remaining work is large, break it into smaller pieces or change "
        "course; drop what does not matter.\n"
        "4. State the plan you will follow next.\n"
        "Tools come back on your next turn."
    )


def resume_after_reflection() -> str:
    """The user turn that follows a reflection reply, so work resumes with tools."""
    return "Thank you. Carry on with the plan you just stated; your tools are available again."


def loop_warning(pattern_length: int, repeats: int) -> str:
    """The message injected when the same tool calls keep repeating."""
    what = "the same tool call"
    if pattern_length > 1:
        what = f"a cycle of {pattern_length} tool calls"
    return (
        f"You have repeated {what} {repeats} times without new results. Stop and "
        "change your approach: re-read the error output, inspect different files, or "
        "try another method instead of repeating the same step."
    )


NO_FINAL_SUMMARY = "(no summary: the model asked for tools on its last turn instead of answering)"


def ignored_tools_warning(count: int, kind: str) -> str:
    """The event text when the model asks for tools on a turn that offered none."""
    return f"the model requested {count} tool call(s) on a {kind} turn; they were not run"


def steering_note(text: str) -> str:
    """A message a supervisor sent while the agent works."""
    return f"Message from the supervisor of this pipeline:\n{text}"
