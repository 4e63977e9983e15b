"""Which backend answers each codergen node, when nodes may name their own.

A node's ``backend`` attribute wins, then the graph's ``backend`` attribute,
then the run's backend (``--backend``, ``ATTRACTOR_BACKEND``, config file).
One exception keeps a dry run dry: ``simulate`` given explicitly for the run
(flag, variable or config) simulates every node. A node naming ``llm`` gets the
built-in agent loop with the run's model (its ``scripted:FILE`` script when the
run has one).
"""

from __future__ import annotations

from attractor.dot.graph import Graph, Node
from attractor.dot.schema import AGENT_BACKENDS, is_acp_backend
from attractor.errors import UsageError
from attractor.handlers.backend import CodergenBackend, StageRequest, backend_name
from attractor.handlers.outcome import Outcome
from attractor.settings import Settings

# The backends themselves (agent loop, LLM clients, agent CLIs, ACP) are imported
# by ``_build`` only when a run uses them: a simulate run loads none of them.


def _codergen_nodes(graph: Graph) -> list[Node]:
    return [node for node in graph.nodes() if node.handler_type == "codergen"]


class BackendRouter:
    """A CodergenBackend that hands each node to the backend it names."""

    def __init__(self, settings: Settings, backends: dict[str, CodergenBackend]) -> None:
        self.settings = settings
        self.backends = backends

    async def run(self, request: StageRequest) -> str | Outcome:
        name = backend_name(request.node, self.settings)
        backend = self.backends.get(name)
        if backend is None:  # a node outside the checked graph (never in a normal run)
            return Outcome.fail(f"node {request.node.id}: backend {name} was not prepared")
        return await backend.run(request)

    async def aclose(self) -> None:
        for backend in self.backends.values():
            await backend.aclose()


def route_backends(settings: Settings, graph: Graph) -> CodergenBackend | None:
    """The router when any node needs an agent CLI or a backend other than the run's.

    None means every node uses the run's own backend, built as before. Agent
    CLIs are checked here, before the run: missing or not logged in is a
    UsageError naming the first node that needs it.

    Raises:
        UsageError: an agent CLI is missing or not logged in, or a node routed
            to the built-in agent has no usable model.
    """
    chosen: dict[str, list[Node]] = {}
    for node in _codergen_nodes(graph):
        chosen.setdefault(backend_name(node, settings), []).append(node)
    run = settings.backend
    if set(chosen) <= {run} and run not in AGENT_BACKENDS and not is_acp_backend(run):
        return None
    backends = {name: _build(name, nodes, settings, graph) for name, nodes in chosen.items()}
    return BackendRouter(settings, backends)


def _build(name: str, nodes: list[Node], settings: Settings, graph: Graph) -> CodergenBackend:
    if name == "simulate":
        from attractor.handlers.simulate import SimulateBackend

        return SimulateBackend()
    if is_acp_backend(name):
        from attractor.handlers.acp.describe import acp_backend

        return acp_backend(name, nodes[0], settings)
    if name in AGENT_BACKENDS:
        return _agent_cli(name, nodes, settings)
    from attractor.handlers.agent_backend import AgentBackend, FactoryModels, build_backend

    if name.startswith("scripted:"):
        return build_backend(settings, graph)
    if name == "llm":
        from attractor.llm.factory import check_ready

        models = FactoryModels(settings)
        for node in nodes:
            check_ready(models.spec_for(node))
        return AgentBackend(models)
    raise UsageError(f"node {nodes[0].id}: unknown backend {name!r}")


def _agent_cli(name: str, nodes: list[Node], settings: Settings) -> CodergenBackend:
    from attractor.handlers.external.agents import AGENTS
    from attractor.handlers.external.backend import ExternalAgentBackend
    from attractor.handlers.external.preflight import check_cli
    from attractor.proc.environment import SANDBOX_REQUIRED

    cli = AGENTS.get(name)
    if cli is not None:
        if settings.sandbox == SANDBOX_REQUIRED and not cli.command_sandbox:
            raise UsageError(
                f"node {nodes[0].id}: backend {cli.name} cannot run its commands in a sandbox "
                "(its own sandbox needs a container engine), but the run requires one "
                f"({settings.source('sandbox')} required); use backend claude-code, codex or "
                "llm for this node"
            )
        missing = cli.missing_for_sandbox() if cli.command_sandbox else []
        if settings.sandbox == SANDBOX_REQUIRED and missing:
            packages = " ".join("bubblewrap" if m == "bwrap" else m for m in missing)
            raise UsageError(
                f"node {nodes[0].id}: {cli.command_sandbox} needs {' and '.join(missing)}, "
                f"which this machine lacks, but the run requires a sandbox "
                f"({settings.source('sandbox')} required); install them "
                f"(apt-get install {packages})"
            )
        path = check_cli(cli, nodes[0].id)
        run_model = settings.model if settings.backend == name else None
        return ExternalAgentBackend(cli, path, run_model)
    raise UsageError(f"node {nodes[0].id}: unknown backend {name!r}")
