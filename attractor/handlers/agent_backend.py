"""The coding agent as the codergen backend of a run.

For each node attempt: resolve the turn budget, run one :class:`AgentSession`
in the node's working directory, and turn how it ended into an honest
:class:`~attractor.handlers.outcome.Outcome`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import anyio

from attractor.agent.hooks import ToolHooks
from attractor.agent.profiles import ToolProfile, choose_profile
from attractor.agent.project_context import ProjectContext, gather
from attractor.agent.run_budget import exhausted_reason
from attractor.agent.session import AgentSession, SessionResult
from attractor.agent.session_config import SessionConfig
from attractor.agent.tools import Tool
from attractor.agent.transcript import Transcript
from attractor.dot.graph import Graph, Node, normalize_label
from attractor.errors import LLMError, McpServerError, UsageError
from attractor.events import AgentWarning, TurnBudgetResolved, TurnLimitReached
from attractor.fileio.writes import write_stage_file
from attractor.handlers.backend import CodergenBackend, StageRequest
from attractor.handlers.mcp_servers import node_servers, require_sdk
from attractor.handlers.model_spec import node_model_spec
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.turn_budget import TurnBudget, resolve_budget
from attractor.llm.factory import ModelSpec, build_model, check_ready
from attractor.llm.pricing import PricedModel, PriceTable
from attractor.llm.scripted import ScriptedModel
from attractor.llm.types import Model, Usage
from attractor.settings import Settings

RESPONSE_PREVIEW = 200
_LIMIT_STATUS = {
    "fail": StageStatus.FAIL,
    "partial_success": StageStatus.PARTIAL_SUCCESS,
    "retry": StageStatus.RETRY,
}


class ModelSource(Protocol):
    """Gives the model a node talks to."""

    def model_for(self, node: Node) -> Model: ...

    def compatible_server(self, node: Node) -> bool:
        """Whether the node's model is served by an OpenAI-compatible server, not OpenAI."""
        ...

    async def aclose(self) -> None: ...


class SharedModel:
    """One model for every node (the scripted backend: its script spans the run)."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def model_for(self, node: Node) -> Model:
        return self.model

    def compatible_server(self, node: Node) -> bool:
        return False

    async def aclose(self) -> None:
        await self.model.aclose()


class FactoryModels:
    """Real models resolved per node from its attributes and the run settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._models: dict[ModelSpec, Model] = {}

    def spec_for(self, node: Node) -> ModelSpec:
        return node_model_spec(node, self.settings)

    def check(self, graph: Graph) -> None:
        """Raise the usage error of the first codergen node whose model cannot be built."""
        for node in graph.nodes():
            if node.handler_type == "codergen":
                spec = self.spec_for(node)
                check_ready(spec)
                check_priced(spec.model, self.settings)

    def model_for(self, node: Node) -> Model:
        spec = self.spec_for(node)
        if spec not in self._models:
            self._models[spec] = PricedModel(build_model(spec), PriceTable(self.settings.prices))
        return self._models[spec]

    def compatible_server(self, node: Node) -> bool:
        spec = self.spec_for(node)
        if spec.provider != "openai" or not spec.base_url:
            return False
        from attractor.llm.openai_model import is_hosted_openai

        return not is_hosted_openai(spec.base_url)

    async def aclose(self) -> None:
        for model in self._models.values():
            await model.aclose()


class AgentBackend:
    """A :class:`~attractor.handlers.backend.CodergenBackend` running the coding agent."""

    def __init__(self, models: ModelSource) -> None:
        self.models = models

    async def run(self, request: StageRequest) -> Outcome:
        node = request.node
        budget = resolve_budget(
            node, request.graph, request.settings, prompt=request.prompt, visit=request.visit
        )
        request.emit(TurnBudgetResolved(node=node.id, budget=budget.to_json()))
        model = self.models.model_for(node)
        profile = choose_profile(
            model.provider,
            model=model.name,
            override=node.get("tool_profile") or None,
            compatible_server=self.models.compatible_server(node),
        )
        context = await gather(
            request.workdir,
            profile.instruction_files,
            model=model.name,
            runner=request.environment,
            checkout=request.checkout,
        )
        config = _session_config(request, budget, profile, context)
        try:
            async with _mcp_tools(request) as mcp_tools:
                session = AgentSession(
                    model,
                    config,
                    tools=profile.registry().with_tools(*mcp_tools),
                    transcript=Transcript(
                        request.stage_dir, visit=request.visit, attempt=request.attempt
                    ),
                    emit=request.emit,
                    run_budget=request.run_budget,
                )
                return await _run_session(session, request, budget)
        except (McpServerError, UsageError) as error:  # a server did not start: no turn taken
            nothing = SessionResult("", 0, False, False, Usage())
            return session_outcome(request, budget, nothing, StageStatus.FAIL, str(error))

    async def aclose(self) -> None:
        await self.models.aclose()


def _session_config(
    request: StageRequest, budget: TurnBudget, profile: ToolProfile, context: ProjectContext
) -> SessionConfig:
    node = request.node
    return SessionConfig(
        node_id=node.id,
        prompt=request.prompt,
        workdir=request.workdir,
        max_turns=budget.effective,
        sprint_limit=budget.sprint_limit,
        reasoning_effort=node.raw("reasoning_effort"),
        shell_timeout_cap=request.settings.shell_timeout_cap,
        kill_grace=request.settings.kill_grace,
        tool_hooks=tool_hooks_for(
            node, request.stage_dir, visit=request.visit, attempt=request.attempt
        ),
        choices=edge_choices(node),
        history=request.history,
        steering=request.steering,
        instructions=profile.instructions,
        context=context,
        context_window=node.get("context_window") or profile.context_window,
        subagent_depth=1 if profile.subagents else 0,
        environment=request.environment,
    )


async def _run_session(session: AgentSession, request: StageRequest, budget: TurnBudget) -> Outcome:
    """Run ``session`` and judge how it ended (a failure under it ends the step as FAIL)."""
    try:
        result = await session.run()
    except anyio.get_cancelled_exc_class():
        raise  # the run's --timeout or Ctrl-C: never an outcome of this node
    except Exception as error:
        request.conversation = session.conversation()
        # The model (or anything under it, an MCP server too) failed mid-task: report
        # what was done so far, with the same budget details as any other outcome.
        partial = SessionResult("", session.charged_turns, False, False, session.usage)
        return session_outcome(request, budget, partial, StageStatus.FAIL, _failure(error))
    request.conversation = result.messages
    return judge_session(request, budget, result)


@asynccontextmanager
async def _mcp_tools(request: StageRequest) -> AsyncIterator[list[Tool]]:
    """The tools of the MCP servers the node names, open for the step (none: [])."""
    found = node_servers(request.node, request.settings)
    if found is None:
        yield []
        return
    require_sdk()
    from attractor.agent.mcp.toolset import McpSelection, open_mcp_tools

    node = request.node.id
    selection = McpSelection(tuple(s.expanded() for s in found.servers), found.allow, found.deny)
    async with open_mcp_tools(
        selection,
        environment=request.environment,
        workdir=request.workdir,
        stage_dir=request.stage_dir,
        kill_grace=request.settings.kill_grace,
        warn=lambda message: request.emit(AgentWarning(node=node, turn=0, message=message)),
    ) as tools:
        yield tools


def tool_hooks_for(node: Node, stage_dir: Path, *, visit: int = 1, attempt: int = 1) -> ToolHooks:
    """The node's ``tool_hooks.pre``/``.post``: its own value, else the graph's.

    A value set on the node wins even when empty, so ``tool_hooks.pre=""``
    turns the graph's hook off for that node.
    """

    def command(key: str) -> str:
        own = node.raw(key)
        return (own if own is not None else node.graph.raw(key) or "").strip()

    return ToolHooks(
        pre=command("tool_hooks.pre"),
        post=command("tool_hooks.post"),
        node_id=node.id,
        stage_dir=stage_dir,
        visit=visit,
        attempt=attempt,
    )


def edge_choices(node: Node) -> tuple[str, ...]:
    """The node's distinct outgoing edge labels, in the order they were written."""
    labels = (edge.label.strip() for edge in node.outgoing())
    return tuple(dict.fromkeys(label for label in labels if label))


def _failure(error: Exception) -> str:
    """The node's failure reason: our own errors say it all; others get their type."""
    if isinstance(error, LLMError | McpServerError):
        return str(error)
    return f"the agent failed unexpectedly: {type(error).__name__}: {error}"


def judge_session(request: StageRequest, budget: TurnBudget, result: SessionResult) -> Outcome:
    """The outcome of a finished session: success, or the budget's verdict.

    Shared with the agent-CLI backends, so a turn limit or a report means the same.
    """
    if result.run_budget_exhausted:
        reason = exhausted_reason(request.run_budget)
        return session_outcome(request, budget, result, StageStatus.FAIL, reason)
    if result.turn_limit_reached:
        reason = budget.limit_reason(result.turns_used)
        request.emit(
            TurnLimitReached(
                node=request.node.id,
                turns_used=result.turns_used,
                limit=budget.effective,
                reason=reason,
            )
        )
        status = _LIMIT_STATUS[budget.on_turn_limit]
        outcome = session_outcome(request, budget, result, status, reason)
        # The model's own report on its final turn still steers (a fail stays a fail).
        return _with_report(outcome, result, request) if outcome.status.is_success else outcome
    return _with_report(
        session_outcome(request, budget, result, StageStatus.SUCCESS, ""), result, request
    )


def _with_report(outcome: Outcome, result: SessionResult, request: StageRequest) -> Outcome:
    """The model's report applied over the budget's verdict."""
    report = result.report
    if report is None:
        return outcome
    status = StageStatus(report.outcome)
    failing = status.is_failure
    reason = report.notes or f"the model reported {report.outcome}"
    label = report.preferred_label
    choices = edge_choices(request.node)
    details = {**outcome.details, "reported_by_model": report.via}
    if label and normalize_label(label) not in {normalize_label(c) for c in choices}:
        details["unknown_label"] = label
        request.emit(
            AgentWarning(
                node=request.node.id,
                turn=result.turns_used,
                message=f"the model chose label {label!r}, which no outgoing edge has",
            )
        )
    return replace(
        outcome,
        status=status,
        preferred_label=label,
        suggested_next_ids=report.suggested_next_ids,
        context_updates={**outcome.context_updates, **report.context_updates},
        notes=report.notes or outcome.notes,
        failure_reason=reason if failing else outcome.failure_reason,
        details=details,
    )


def session_outcome(
    request: StageRequest,
    budget: TurnBudget,
    result: SessionResult,
    status: StageStatus,
    reason: str,
) -> Outcome:
    """The Outcome of a session ended with ``status``; writes response.md."""
    _write_response(request.stage_dir, result.text)
    failing = status.is_failure
    return Outcome(
        status,
        notes=reason or f"Stage completed: {request.node.id}",
        failure_reason=reason if failing else "",
        context_updates={
            "agent.turns_used": result.turns_used,
            "agent.turn_limit_reached": result.turn_limit_reached,
            "last_stage": request.node.id,
            "last_response": result.text[:RESPONSE_PREVIEW],
        },
        details={
            "turn_budget": budget.to_json(),
            "turns_used": result.turns_used,
            "turn_limit_reached": result.turn_limit_reached,
            "usage": result.usage.to_json(),
            **({"boundary": request.environment.describe()} if request.environment else {}),
        },
    )


def _write_response(stage_dir: Path, text: str) -> None:
    # The handler only writes response.md from the short context preview when
    # the backend has not; the node's full final text belongs there.
    write_stage_file(stage_dir, "response.md", text)


def check_priced(model: str, settings: Settings) -> None:
    """A cost budget needs a price for every model of the run: fail before it starts."""
    if settings.max_cost is None or PriceTable(settings.prices).price_of(model) is not None:
        return
    raise UsageError(
        f"{settings.source('max_cost')} needs the price of model {model!r}, which attractor "
        f'does not know: add [prices."{model}"] with input and output (US dollars per '
        "million tokens) to the config file"
    )


def build_backend(settings: Settings, graph: Graph) -> CodergenBackend:
    """The agent backend for ``settings.backend`` (``scripted:FILE`` or ``llm``).

    Raises:
        UsageError: a bad script file, or a codergen node whose model cannot be
            built (unknown provider, missing SDK extra or API key), before the
            run starts.
    """
    if settings.backend.startswith("scripted:"):
        script = Path(settings.backend.removeprefix("scripted:"))
        model = ScriptedModel.from_file(script)
        check_priced(model.name, settings)
        return AgentBackend(SharedModel(PricedModel(model, PriceTable(settings.prices))))
    if settings.backend == "llm":
        models = FactoryModels(settings)
        models.check(graph)
        return AgentBackend(models)
    raise ValueError(f"backend {settings.backend!r} is not served by the agent")
