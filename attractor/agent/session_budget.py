"""A session's turns against its node's turn limit and the run-wide budget.

:class:`SessionBudget` decides the kind of each next request (work, a
reflection, the final turn, or none at all) and keeps the session's place in
the run budget's reserve: every running agent has one request kept back for its
final turn, so the run's limit is never exceeded and no parallel agent is cut
off without a summary.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from attractor.agent import prompts
from attractor.agent.run_budget import BudgetKind, RunTurnBudget, budget_label, budget_name
from attractor.agent.transcript import TurnKind
from attractor.agent.turn_state import TurnState

#: Share of the budget after which the model is told how many turns remain.
NOTICE_AT = 0.8


class SessionBudget:
    """The requests one session has made and may make; ``warn`` says why it made none."""

    def __init__(
        self,
        run_budget: RunTurnBudget,
        state: TurnState,
        *,
        max_turns: int,
        sprint_limit: int,
        warn: Callable[[str], None],
    ) -> None:
        self.run_budget = run_budget
        self.state = state
        self.max_turns = max_turns
        self.sprint_limit = sprint_limit
        self._warn = warn
        #: Requests this session made.
        self.turns_used = 0
        #: Requests made by subagents, charged to this session's budget.
        self.subagent_turns = 0

    @property
    def charged_turns(self) -> int:
        """Requests charged to the budget: this session's and its subagents'."""
        return self.turns_used + self.subagent_turns

    def take(self) -> int:
        """Count the request about to be made; its turn number."""
        self.turns_used += 1
        return self.turns_used

    def charge_subagent(self, turns: int) -> None:
        """Charge a finished subagent's requests to this session."""
        self.subagent_turns += turns

    def register(self) -> None:
        """Count the session among the run budget's running agents."""
        self.state.registered = self.run_budget.register()

    def unregister(self) -> None:
        """Give back the session's reserved final request (once)."""
        if self.state.registered:
            self.state.registered = False
            self.run_budget.unregister()

    def next_kind(self) -> TurnKind | None:
        """The kind of the next request, or None when the run budget allows none.

        A request is the final one when no more than the reserve of the run
        budget is left (``active`` counts this session too); an agent that starts
        when the rest is already reserved for the others makes no request at all.
        """
        budget, state = self.run_budget, self.state
        # Tokens or cost used up: a running agent gets its final turn, a new one none.
        overspent = budget.overspent()
        if overspent is not None and self.turns_used == 0:
            self._spent(overspent)
            self.unregister()
            self._warn(f"the {budget_name(budget, overspent)} is used up; no request made")
            return None
        at_limit = self.charged_turns + 1 >= self.max_turns
        final = at_limit or overspent is not None or state.run_budget_exhausted
        granted, last = budget.reserve(final) if state.registered else (False, False)
        if not granted:
            self._spent("turns")
            self.unregister()
            self._warn(
                f"the {budget_name(budget, 'turns')} is used up or kept for the "
                "final turns of other agents; no request made"
            )
            return None
        if at_limit:
            state.turn_limit_reached = True
        if overspent is not None:
            self._spent(overspent)
        if last:
            self._spent("turns")
        if state.turn_limit_reached or state.run_budget_exhausted:
            # Its final request is taken, and reserve() gave its place back with it.
            state.registered = False
            return "final"
        if self.sprint_limit > 0 and state.work_since_reflection >= self.sprint_limit:
            return "reflection"
        return "work"

    def _spent(self, kind: BudgetKind) -> None:
        self.state.run_budget_exhausted = True
        self.run_budget.mark_exhausted(kind)

    def notes(self, kind: TurnKind) -> list[str]:
        """What the request of ``kind`` is told of the budget: the reflection it
        asks for, why it is the final one, to go on after a reflection, or that
        the turns are running low (once)."""
        used, state = self.charged_turns, self.state
        notes: list[str] = []
        if kind == "reflection":
            remaining = self.max_turns - used
            sprint = self.sprint_limit
            notes.append(
                prompts.reflection_message(used=used, remaining=remaining, sprint_limit=sprint)
            )
        elif kind == "final":
            reason = "turn budget" if state.turn_limit_reached else budget_label(self.run_budget)
            notes.append(prompts.final_turn_note(reason=reason))
        else:
            if state.after_reflection:
                notes.append(prompts.resume_after_reflection())
            if not state.noticed and used >= math.ceil(NOTICE_AT * self.max_turns):
                state.noticed = True
                notes.append(prompts.budget_note(used=used, max_turns=self.max_turns))
        state.after_reflection = False
        return notes

    def answered(self, kind: TurnKind) -> None:
        """The request of ``kind`` was answered: count the work since the last reflection."""
        if kind == "work":
            self.state.work_since_reflection += 1
        elif kind == "reflection":
            self.state.work_since_reflection = 0
            self.state.after_reflection = True
