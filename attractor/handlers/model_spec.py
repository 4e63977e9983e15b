"""Which model an LLM node uses: its own attributes over the run's settings."""

from __future__ import annotations

from attractor.dot.graph import Node
from attractor.llm.factory import ModelSpec, resolve_spec
from attractor.settings import Settings


def node_model_spec(node: Node, settings: Settings) -> ModelSpec:
    """The provider, model, endpoint and key variable ``node`` runs on.

    Raises:
        UsageError: no provider can be told from the node or the run.
    """
    return resolve_spec(
        node_provider=node.get("llm_provider") or None,
        node_model=node.get("llm_model") or None,
        node_reasoning_effort=node.raw("reasoning_effort"),
        run_provider=settings.provider,
        run_model=settings.model,
        run_base_url=settings.base_url,
        run_api_key_env=settings.api_key_env,
    )
