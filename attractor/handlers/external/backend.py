"""An agent CLI as the codergen backend of a node.

For each node attempt: resolve the turn budget exactly as for the built-in
agent, start the CLI in the node's working directory with the rendered prompt,
follow its stream (:mod:`~attractor.handlers.external.tracker`), and judge how
it ended the same way the built-in agent's session is judged, so a turn limit,
an exhausted run budget or the agent's own JSON report mean the same here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from attractor.agent.transcript import Transcript
from attractor.events import TurnBudgetResolved
from attractor.fileio.writes import write_text
from attractor.handlers.agent_backend import judge_session, session_outcome
from attractor.handlers.backend import StageRequest
from attractor.handlers.external.bounds import own_env
from attractor.handlers.external.mcp import CliServers
from attractor.handlers.external.runner import (
    STDERR_FILE,
    AgentProcess,
    Ended,
    run_agent,
)
from attractor.handlers.external.spec import AgentCli, Invocation
from attractor.handlers.external.tracker import Tracker
from attractor.handlers.mcp_servers import node_servers
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.turn_budget import TurnBudget, resolve_budget
from attractor.proc.bwrap import Fence
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.environment import ExecutionEnvironment, LocalEnvironment
from attractor.proc.process import process_env
from attractor.proc.sandbox_env import BwrapEnvironment


class ExternalAgentBackend:
    """A :class:`~attractor.handlers.backend.CodergenBackend` running one agent CLI.

    ``executable`` is the full path preflight found; ``run_model`` is the run's
    ``--model``, used when the node names none and this CLI is the run's backend.
    """

    def __init__(self, cli: AgentCli, executable: str, run_model: str | None = None) -> None:
        self.cli = cli
        self.executable = executable
        self.run_model = run_model

    async def run(self, request: StageRequest) -> Outcome:
        node = request.node
        budget = resolve_budget(
            node, request.graph, request.settings, prompt=request.prompt, visit=request.visit
        )
        request.emit(TurnBudgetResolved(node=node.id, budget=budget.to_json()))
        fence = _fence(request.environment)
        if fence is not None and self.cli.missing_for_sandbox():
            fence = None  # sandbox=auto: the CLI's own sandbox cannot start here
        invocation = Invocation(
            max_turns=budget.effective,
            model=node.get("llm_model") or self.run_model,
            reasoning_effort=node.raw("reasoning_effort"),
            sandboxed=fence is not None,
            network=fence is not None and fence.network,
            hosts=() if fence is None else fence.hosts,
            writable=() if fence is None else fence.writable,
            mcp=_servers(request),
        )
        tracker = Tracker(
            node_id=node.id,
            max_turns=budget.effective,
            cli_counts_turns=self.cli.turn_flag,
            emit=request.emit,
            transcript=Transcript(request.stage_dir, visit=request.visit, attempt=request.attempt),
            run_budget=request.run_budget,
        )
        parser = self.cli.parser()

        def on_event(event: dict[str, Any]) -> bool:
            tracker.feed(parser.feed(event))
            return tracker.stop is not None

        ended = await run_agent(self._process(request, invocation), on_event)
        tracker.close()
        return self._judge(request, budget, tracker, ended)

    async def aclose(self) -> None:
        return None

    def _process(self, request: StageRequest, invocation: Invocation) -> AgentProcess:
        prompt_file = request.stage_dir / "prompt.md"
        if not prompt_file.exists():
            write_text(prompt_file, request.prompt)
        argv = self.cli.argv(invocation)
        return AgentProcess(
            argv=[self.executable, *argv[1:]],
            workdir=request.workdir,
            stage_dir=request.stage_dir,
            prompt_file=prompt_file,
            kill_grace=request.settings.kill_grace,
            env=self._env(request, invocation),
        )

    def _env(self, request: StageRequest, invocation: Invocation) -> dict[str, str]:
        """The node's filtered environment, the stage variables, the CLI's own credentials
        and what its MCP servers name."""
        stage = {"ATTRACTOR_STAGE_DIR": request.stage_dir, "ATTRACTOR_NODE": request.node.id}
        environment = request.environment
        policy = environment.policy if isinstance(environment, LocalEnvironment) else EnvPolicy()
        whole = process_env(stage)
        env = policy.apply(whole)
        # The CLI talks to its provider itself: exactly its own variables pass,
        # unless the node's env_deny names them.
        env.update(own_env(self.cli, policy))
        # It starts the node's MCP servers itself and expands their ${VAR}s.
        env.update({name: whole[name] for name in invocation.mcp.variables() if name in whole})
        if self.cli.mcp_env is not None and invocation.mcp.servers:
            env.update(self.cli.mcp_env(invocation.mcp, request.stage_dir))
        return env

    def _judge(
        self, request: StageRequest, budget: TurnBudget, tracker: Tracker, ended: Ended
    ) -> Outcome:
        limit = tracker.hit_turn_limit
        result = tracker.session_result()
        # Once attractor decided to stop the CLI, how it then ended (killed, or
        # exiting by itself first) does not matter: the budget's verdict stands.
        if tracker.stop is None and not limit and not _succeeded(tracker, ended):
            reason = self._failure(tracker, ended)
            outcome = session_outcome(request, budget, result, StageStatus.FAIL, reason)
        else:
            outcome = judge_session(request, budget, result)
        return self._with_details(outcome, tracker, ended)

    def _failure(self, tracker: Tracker, ended: Ended) -> str:
        """The failure reason of a CLI that ended without success, in its own words."""
        name, code = self.cli.name, ended.returncode
        if tracker.auth_failed or (code is not None and code == self.cli.auth_exit_code):
            said = [e.message for e in tracker.errors if e.auth] or [_last_line(ended.stderr_tail)]
            return f"{name} is not logged in ({said[0][:300]}); {self.cli.login_hint}"
        finished = tracker.finished
        if finished is not None and finished.ending == "error":
            how, said_last = "reported an error", finished.message
        else:
            how = "ended without a result" if code == 0 else f"exited with code {code}"
            said_last = ""
        if not said_last:
            errors = [e.message for e in tracker.errors]
            said_last = errors[-1] if errors else _last_line(ended.stderr_tail)
        return f"{name} {how}: {said_last[:300] or 'see ' + STDERR_FILE}"

    def _with_details(self, outcome: Outcome, tracker: Tracker, ended: Ended) -> Outcome:
        details: dict[str, Any] = {**outcome.details, "backend": self.cli.name}
        details["exit_code"] = ended.returncode
        updates = {**outcome.context_updates, "agent.backend": self.cli.name}
        return replace(outcome, details=details, context_updates=updates)


def _servers(request: StageRequest) -> CliServers:
    """The node's MCP servers as written (each ``${VAR}`` checked to be set).

    Raises:
        UsageError: an unknown server, or a variable it names is not set.
    """
    found = node_servers(request.node, request.settings)
    if found is None:
        return CliServers()
    for server in found.servers:
        server.expanded()
    return CliServers(found.servers, found.allow, found.deny)


def _fence(environment: ExecutionEnvironment | None) -> Fence | None:
    """The node's sandbox fence when attractor's sandbox is on for it, else None."""
    if isinstance(environment, BwrapEnvironment):
        return environment.fence or Fence(environment.workdir)
    return None


def _succeeded(tracker: Tracker, ended: Ended) -> bool:
    finished = tracker.finished
    return ended.returncode == 0 and finished is not None and finished.ending == "success"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
