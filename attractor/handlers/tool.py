"""The tool handler: run ``tool_command`` through the shell in its own process group.

Under ``--backend simulate`` (chosen on purpose, see ``Settings.simulates_tools``)
the command is not run: the node reports what it would run.

stdout and stderr go to files in the stage directory; while the command runs,
the lines it writes are emitted as ``stage_output`` events (batched, see
:mod:`attractor.proc.follow`); their tail goes into the context as
``tool.output``. A non-zero exit is FAIL with the exit code, the last
line of stderr and the last lines of stdout in the reason. Cancellation (node
timeout, ``--timeout``, Ctrl-C) kills the process group (see
:mod:`attractor.proc.process`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from attractor.dot.graph import Graph, Node
from attractor.events import StageOutput
from attractor.handlers.base import StageEnv
from attractor.handlers.context import Context
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.simulate import SimulateBackend, parse_plan
from attractor.proc.environment import LocalEnvironment
from attractor.proc.follow import Chunk, OutputFollower
from attractor.proc.process import ProcessResult
from attractor.redact import current as current_redactor
from attractor.redact import scrub_files

#: How much of the output tail goes into the context.
OUTPUT_TAIL = 4000
#: How many of stdout's last lines, and how much of each, a failure reason quotes.
REASON_LINES = 3
REASON_CHARS = 200


class ToolHandler:
    """Runs a shell command and reports its exit status."""

    async def execute(self, node: Node, context: Context, graph: Graph, env: StageEnv) -> Outcome:
        command = str(node.get("tool_command") or "").strip()
        if not command:
            return Outcome.fail(f"node {node.id}: no tool_command specified")
        if env.settings.simulates_tools:
            return simulated_tool(node, command, _execution(env, node))
        environment = env.environment(node, graph)
        outcome = await self._run(node, command, environment, env)
        # Where it ran, for status.json and the web page.
        outcome.details.setdefault("boundary", environment.describe())
        return outcome

    async def _run(
        self, node: Node, command: str, environment: LocalEnvironment, env: StageEnv
    ) -> Outcome:
        workdir = environment.workdir
        if not workdir.is_dir():
            return Outcome.fail(f"node {node.id}: working directory {workdir} does not exist")
        outputs = (env.stage_dir / "stdout.txt", env.stage_dir / "stderr.txt")
        follower = OutputFollower(
            {"stdout": outputs[0], "stderr": outputs[1]}, output_sink(node.id, env)
        )
        try:
            with follower.running():  # the last lines come also when it is stopped
                result = await environment.run(
                    command,
                    cwd=workdir,
                    kill_grace=env.settings.kill_grace,
                    extra_env={"ATTRACTOR_STAGE_DIR": env.stage_dir, "ATTRACTOR_NODE": node.id},
                    stdout_path=outputs[0],
                    stderr_path=outputs[1],
                )
        finally:
            scrub_files(outputs)  # also when stopped: a resume must not find them raw
        result = redact_result(result)
        tail = result.stdout[-OUTPUT_TAIL:]
        updates = {"tool.output": tail, "tool.exit_code": result.returncode}
        if result.returncode == 0:
            return Outcome(
                StageStatus.SUCCESS, notes=f"Tool completed: {command}", context_updates=updates
            )
        reason = failure_reason(result.returncode, result.stdout, result.stderr)
        return Outcome(StageStatus.FAIL, failure_reason=reason, context_updates=updates)


def output_sink(node_id: str, env: StageEnv) -> Callable[[Chunk], None]:
    """Emits each chunk a step's command wrote as a ``stage_output`` event."""

    def emit(chunk: Chunk) -> None:
        env.emit(
            StageOutput(
                node=node_id,
                visit=env.visit,
                attempt=env.attempt,
                stream=chunk.stream,
                text=chunk.shown(f"{chunk.stream}.txt"),
                offset=chunk.offset,
                skipped=chunk.skipped,
            )
        )

    return emit


def redact_result(result: ProcessResult) -> ProcessResult:
    """``result`` with the run's secrets taken out of its output tails."""
    redactor = current_redactor()
    if redactor is None:
        return result
    return replace(result, stdout=redactor.text(result.stdout), stderr=redactor.text(result.stderr))


def failure_reason(code: int | None, stdout: str, stderr: str) -> str:
    """``tool_command exited with code N``, the last line of stderr, and stdout's tail.

    Many tools report on stdout alone (pytest's ``1 failed, 3 passed``): the
    last :data:`REASON_LINES` non-blank lines of stdout follow, each cut to
    :data:`REASON_CHARS` characters, so the reason says why without opening
    ``stdout.txt``.
    """
    reason = f"tool_command exited with code {code}"
    err = stderr.strip().splitlines()
    if err:
        reason += f": {err[-1][:REASON_CHARS]}"
    out = [line.strip()[:REASON_CHARS] for line in stdout.splitlines() if line.strip()]
    if out:
        reason += "; stdout ends: " + " | ".join(out[-REASON_LINES:])
    return reason


def _execution(env: StageEnv, node: Node) -> int:
    """The 1-based execution count of ``node`` (attempts included), as SimulateBackend counts."""
    backend = env.services.backend
    if isinstance(backend, SimulateBackend):
        backend.executions[node.id] += 1
        return backend.executions[node.id]
    return env.visit


def simulated_tool(node: Node, command: str, execution: int) -> Outcome:
    """What ``--backend simulate`` reports for a tool node: the command, not its effects.

    The node's ``simulate`` attribute plans its statuses per execution, as for LLM nodes.
    """
    plan = parse_plan(str(node.get("simulate") or ""))
    status = plan[min(execution, len(plan)) - 1] if plan else StageStatus.SUCCESS
    updates = {"tool.output": "", "tool.exit_code": 0 if status.is_success else 1}
    notes = f"simulated: would run: {command}"
    reason = "" if status.is_success else f"simulated {status.value} (execution {execution})"
    return Outcome(status, notes=notes, failure_reason=reason, context_updates=updates)
