"""The wait.human handler: ask a person which outgoing edge to take."""

from __future__ import annotations

import time
from dataclasses import dataclass

from attractor.dot.graph import Graph, Node
from attractor.events import InterviewCompleted, InterviewStarted, InterviewTimeout
from attractor.handlers.base import StageEnv
from attractor.handlers.context import Context
from attractor.handlers.interviewer import (
    Answer,
    Option,
    Question,
    QuestionType,
    accelerator_key,
    match_option,
)
from attractor.handlers.outcome import Outcome, StageStatus


@dataclass(frozen=True)
class Choice:
    key: str
    label: str
    target: str


def choices_for(node: Node) -> list[Choice]:
    """One choice per outgoing edge: its label (else target id) and accelerator key."""
    result = []
    for edge in node.outgoing():
        label = edge.label or edge.target
        result.append(Choice(accelerator_key(label), label, edge.target))
    return result


class WaitForHumanHandler:
    """Presents the outgoing edges as choices and routes to the one picked."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        choices = choices_for(node)
        if not choices:
            return Outcome.fail(f"human gate {node.id} has no outgoing edges to choose from")
        question = _question(node, choices)
        env.emit(InterviewStarted(question=question.text, stage=node.id))
        started = time.monotonic()
        answer = await env.services.interviewer.ask(question)
        elapsed = time.monotonic() - started
        if answer.is_timeout:
            env.emit(InterviewTimeout(question=question.text, stage=node.id, duration=elapsed))
            return _on_timeout(node, choices)
        env.emit(InterviewCompleted(question=question.text, answer=answer.value, duration=elapsed))
        if answer.is_skipped:
            return Outcome.fail(
                f"human gate {node.id}: no answer given (answers file used up or input closed)"
            )
        choice = _find(answer, choices)
        if choice is None:
            return Outcome.fail(f"human gate {node.id}: answer {answer.value!r} matches no choice")
        return _chosen(choice)


def _question(node: Node, choices: list[Choice]) -> Question:
    options = tuple(Option(c.key, c.label) for c in choices)
    default_text = str(node.get("human.default_choice") or "")
    default = None
    if default_text:
        picked = match_option(default_text, options) or _by_target(default_text, choices, options)
        if picked is not None:
            default = Answer(picked.key, selected_option=picked)
    return Question(
        text=node.label or "Select an option:",
        type=QuestionType.MULTIPLE_CHOICE,
        options=options,
        default=default,
        timeout_seconds=question_timeout(node),
        stage=node.id,
    )


def question_timeout(node: Node) -> float | None:
    """``human.timeout``, else the node's ``timeout``: how long the question waits.

    A gate's ``timeout`` is read as the question's, so that ``human.default_choice``
    applies when it expires instead of the node failing (see docs/engine.md).
    """
    if node.has("human.timeout"):
        value = node.get("human.timeout")
        return float(value) if value is not None else None
    return node.timeout


def _by_target(text: str, choices: list[Choice], options: tuple[Option, ...]) -> Option | None:
    for choice, option in zip(choices, options, strict=True):
        if choice.target == text:
            return option
    return None


def _find(answer: Answer, choices: list[Choice]) -> Choice | None:
    wanted = answer.selected_option
    for choice in choices:
        if wanted is not None and (choice.key, choice.label) == (wanted.key, wanted.label):
            return choice
    options = [Option(c.key, c.label) for c in choices]
    picked = match_option(answer.text or answer.value, options)
    if picked is None:
        by_target = {c.target: c for c in choices}
        return by_target.get((answer.text or answer.value).strip())
    return choices[options.index(picked)]


def _on_timeout(node: Node, choices: list[Choice]) -> Outcome:
    default_text = str(node.get("human.default_choice") or "")
    if default_text:
        choice = _find(Answer(default_text, text=default_text), choices)
        if choice is not None:
            return _chosen(choice, note="timed out; took human.default_choice")
    return Outcome(
        StageStatus.RETRY,
        failure_reason=f"human gate {node.id} timed out with no human.default_choice",
    )


def _chosen(choice: Choice, note: str = "") -> Outcome:
    return Outcome(
        StageStatus.SUCCESS,
        preferred_label=choice.label,
        suggested_next_ids=(choice.target,),
        context_updates={"human.gate.selected": choice.key, "human.gate.label": choice.label},
        notes=note or f"human chose {choice.label}",
    )
