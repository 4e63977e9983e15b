"""ACP agents (Agent Client Protocol) as codergen backends: ``backend="acp:NAME"``.

The agent named ``NAME`` in the config file's ``[acp_agents.NAME]`` table runs
as a child process speaking ACP over stdio; attractor is its client, through
the ``agent-client-protocol`` SDK (``pip install 'attractor[acp]'``).

- :mod:`.process` starts the agent (process group, run ledger, sandbox) and
  frames its stdio for the SDK;
- :mod:`.updates` turns session updates into the agent-CLI stream steps, so
  the CLI backends' tracker numbers turns, fills the transcript and the events;
- :mod:`.permissions` answers tool-permission requests by the node's policy;
- :mod:`.client` is the client side (updates, permissions, files);
- :mod:`.terminals` runs the agent's terminal commands in the node's environment;
- :mod:`.session` drives one attempt: process, handshake, prompt turns, stopping;
- :mod:`.backend` is the codergen backend: budget, tracker, and the verdict;
- :mod:`.describe` says what a node would start, for ``--dry-run`` (no SDK needed).
"""
