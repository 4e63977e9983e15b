"""The one place that decides which model a node talks to, and builds it.

Provider SDKs are imported only when a model of that provider is checked or
built, so importing this module never needs ``openai``, ``anthropic`` or
``google-genai``. OpenAI's own service is reached through the Responses API;
any other OpenAI-compatible server (``--base-url``) through Chat Completions.
Which API key goes where is decided in :mod:`attractor.llm.credentials`.
"""

from __future__ import annotations

import os
import re

from attractor.errors import UsageError
from attractor.llm.credentials import resolve_key
from attractor.llm.types import Model
from attractor.valueclass import frozen

PROVIDERS = ("openai", "anthropic", "gemini")
_OPENAI_MODEL = re.compile(r"^(gpt-|chatgpt-|o[134](-|$))")
#: The variable each provider's SDK reads for another endpoint when given none.
BASE_URL_ENVS = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "gemini": "GOOGLE_GEMINI_BASE_URL",
}


@frozen
class ModelSpec:
    """Which model to use and how to reach it."""

    provider: str
    model: str
    base_url: str | None = None
    reasoning_effort: str | None = None
    #: The variable holding the key, when the user named one (see llm.credentials).
    api_key_env: str | None = None


def detect_provider(model: str) -> str | None:
    """Guess the provider from a model name; ``None`` when the name says nothing."""
    name = model.strip().lower()
    if _OPENAI_MODEL.match(name):
        return "openai"
    if name.startswith("claude-"):
        return "anthropic"
    if name.startswith("gemini-"):
        return "gemini"
    return None


def model_family(model: str) -> str | None:
    """The vendor whose model ``model`` is, whoever serves it; ``None`` when unknown.

    Gateways and proxies often prefix the vendor or their own route
    (``openai/gpt-5``, ``openrouter/anthropic/claude-sonnet-4-5``): the last
    path segment is the model's own name.
    """
    return detect_provider(model.strip().rsplit("/", 1)[-1])


def resolve_spec(
    *,
    node_provider: str | None,
    node_model: str | None,
    node_reasoning_effort: str | None,
    run_provider: str | None,
    run_model: str | None,
    run_base_url: str | None,
    run_api_key_env: str | None = None,
) -> ModelSpec:
    """Combine node attributes and run options into one :class:`ModelSpec`.

    Run options win over node attributes. A model chosen for the run is not paired
    with a provider named on the node unless the model's own name is silent about
    its provider. When no base URL is given, the provider SDK's own variable
    (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``)
    applies, so that the key rule (:mod:`attractor.llm.credentials`) sees the
    endpoint the SDK would use.

    Raises:
        UsageError: no model, an undetectable provider or an unknown provider.
    """
    model = run_model or node_model
    if not model:
        raise UsageError(
            "no model configured: pass --model, set ATTRACTOR_MODEL "
            "or give the node an llm_model attribute"
        )
    provider = _choose_provider(
        model, node_provider, run_provider, from_run=bool(run_model), base_url=run_base_url
    )
    base_url = run_base_url or os.environ.get(BASE_URL_ENVS[provider]) or None
    return ModelSpec(provider, model, base_url, node_reasoning_effort, run_api_key_env)


def _choose_provider(
    model: str,
    node_provider: str | None,
    run_provider: str | None,
    *,
    from_run: bool,
    base_url: str | None,
) -> str:
    if run_provider:
        provider: str | None = run_provider
    elif from_run:
        provider = detect_provider(model) or node_provider
    else:
        provider = node_provider or detect_provider(model)
    if not provider and base_url:
        # A base URL and a model whose name says nothing: an OpenAI-compatible
        # server (llama.cpp, vLLM, Ollama...).
        provider = "openai"
    if not provider:
        raise UsageError(
            f"cannot tell the provider of model {model!r}: pass --provider, set "
            "ATTRACTOR_PROVIDER or give the node an llm_provider attribute "
            f"({', '.join(PROVIDERS)})"
        )
    provider = provider.strip().lower()
    _check_known(provider)
    return provider


def check_ready(spec: ModelSpec) -> None:
    """Fail early, before a run starts, if ``spec`` cannot be built.

    Raises:
        ProviderNotInstalledError: the provider's SDK extra is not installed.
        MissingCredentialsError: the key variable the model needs is not set (the
            provider's own for its service, or the one named by ``api_key_env``).
        UsageError: the provider is unknown.
    """
    _check_known(spec.provider)
    # Adapters are imported here, not at the top: each raises
    # ProviderNotInstalledError when its SDK is missing.
    if spec.provider == "openai":
        import attractor.llm.openai_model  # noqa: F401
    elif spec.provider == "gemini":
        import attractor.llm.gemini_model  # noqa: F401
    else:
        import attractor.llm.anthropic_model  # noqa: F401
    resolve_key(spec.provider, spec.base_url, api_key_env=spec.api_key_env)


def uses_responses_api(spec: ModelSpec) -> bool:
    """True when ``spec`` is OpenAI's own service (no base URL, or OpenAI's host)."""
    if spec.provider != "openai":
        return False
    if spec.base_url is None:
        return True
    from attractor.llm.openai_model import is_hosted_openai

    return is_hosted_openai(spec.base_url)


def build_model(spec: ModelSpec, *, stream: bool = False) -> Model:
    """Build the adapter for ``spec``; raises what :func:`check_ready` raises."""
    _check_known(spec.provider)
    if uses_responses_api(spec):
        import attractor.llm.openai_responses as openai_responses

        return openai_responses.OpenAIResponsesModel(
            spec.model,
            base_url=spec.base_url,
            api_key_env=spec.api_key_env,
            stream=stream,
            reasoning_effort=spec.reasoning_effort,
        )
    if spec.provider == "openai":
        import attractor.llm.openai_model as openai_model

        return openai_model.OpenAIModel(
            spec.model,
            base_url=spec.base_url,
            api_key_env=spec.api_key_env,
            stream=stream,
            # Local servers (llama.cpp and friends) handle one call per turn best.
            parallel_tool_calls=False,
            reasoning_effort=spec.reasoning_effort,
        )
    if spec.provider == "gemini":
        import attractor.llm.gemini_model as gemini_model

        return gemini_model.GeminiModel(
            spec.model,
            base_url=spec.base_url,
            api_key_env=spec.api_key_env,
            reasoning_effort=spec.reasoning_effort,
        )
    import attractor.llm.anthropic_model as anthropic_model

    return anthropic_model.AnthropicModel(
        spec.model,
        base_url=spec.base_url,
        api_key_env=spec.api_key_env,
        stream=stream,
        reasoning_effort=spec.reasoning_effort,
    )


def _check_known(provider: str) -> None:
    if provider not in PROVIDERS:
        raise UsageError(f"unknown provider {provider!r}: expected {', '.join(PROVIDERS)}")
