"""Choosing and building models: precedence, readiness checks, lazy SDK imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attractor.errors import MissingCredentialsError, ProviderNotInstalledError, UsageError
from attractor.llm.factory import ModelSpec, build_model, check_ready, detect_provider, resolve_spec
from attractor.llm.openai_model import OpenAIModel
from attractor.llm.openai_responses import OpenAIResponsesModel
from attractor.llm.retry import RetryPolicy
from attractor.llm.types import Model
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.wire import READ_FILE, openai_completion, simple_request

NO_RUN = {"run_provider": None, "run_model": None, "run_base_url": None}
NO_NODE = {"node_provider": None, "node_model": None, "node_reasoning_effort": None}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("gpt-4o", "openai"),
        ("gpt-5-mini", "openai"),
        ("chatgpt-4o-latest", "openai"),
        ("o1", "openai"),
        ("o3-mini", "openai"),
        ("o4-mini", "openai"),
        ("claude-sonnet-4-5", "anthropic"),
        ("Claude-3-7-sonnet-latest", "anthropic"),
        ("gemma-3-270m", None),
        ("llama3.1:8b", None),
        ("omni-model", None),
        ("o10", None),
    ],
)
def test_detect_provider(model: str, provider: str | None) -> None:
    assert detect_provider(model) == provider


def test_node_attributes_apply_without_run_options() -> None:
    spec = resolve_spec(
        node_provider=None, node_model="claude-opus-4-1", node_reasoning_effort="high", **NO_RUN
    )
    assert spec == ModelSpec("anthropic", "claude-opus-4-1", None, "high")


def test_run_options_override_node_attributes() -> None:
    spec = resolve_spec(
        node_provider="anthropic",
        node_model="claude-opus-4-1",
        node_reasoning_effort="low",
        run_provider="openai",
        run_model="gemma",
        run_base_url="http://127.0.0.1:9/v1",
    )
    assert spec == ModelSpec("openai", "gemma", "http://127.0.0.1:9/v1", "low")


def test_run_model_does_not_inherit_a_conflicting_node_provider() -> None:
    spec = resolve_spec(
        node_provider="anthropic",
        node_model="claude-opus-4-1",
        node_reasoning_effort=None,
        run_provider=None,
        run_model="gpt-4o",
        run_base_url=None,
    )
    assert spec.provider == "openai"


def test_node_provider_used_when_model_name_is_silent() -> None:
    spec = resolve_spec(
        node_provider="OpenAI", node_model="qwen2.5-coder", node_reasoning_effort=None, **NO_RUN
    )
    assert (spec.provider, spec.model) == ("openai", "qwen2.5-coder")


def test_openai_base_url_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    openai_spec = resolve_spec(**NO_NODE, run_provider=None, run_model="gpt-4o", run_base_url=None)
    claude_spec = resolve_spec(
        **NO_NODE, run_provider=None, run_model="claude-opus-4-1", run_base_url=None
    )
    explicit = resolve_spec(
        **NO_NODE, run_provider=None, run_model="gpt-4o", run_base_url="http://other/v1"
    )
    assert openai_spec.base_url == "http://127.0.0.1:8080/v1"
    assert claude_spec.base_url is None
    assert explicit.base_url == "http://other/v1"


def test_missing_model_says_what_to_set() -> None:
    with pytest.raises(UsageError) as caught:
        resolve_spec(**NO_NODE, **NO_RUN)
    message = str(caught.value)
    assert "--model" in message and "ATTRACTOR_MODEL" in message and "llm_model" in message


def test_undetectable_provider_says_what_to_set() -> None:
    with pytest.raises(UsageError) as caught:
        resolve_spec(**NO_NODE, run_provider=None, run_model="gemma", run_base_url=None)
    message = str(caught.value)
    assert "--provider" in message and "ATTRACTOR_PROVIDER" in message and "llm_provider" in message


def test_unknown_provider_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown provider 'mistral'"):
        resolve_spec(**NO_NODE, run_provider="mistral", run_model="large", run_base_url=None)


def test_gemini_is_detected_from_the_model_name() -> None:
    spec = resolve_spec(**NO_NODE, run_provider=None, run_model="gemini-2.5-pro", run_base_url=None)
    assert spec.provider == "gemini"


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        (ModelSpec("openai", "gpt-4o"), "OPENAI_API_KEY"),
        (ModelSpec("anthropic", "claude-opus-4-1"), "ANTHROPIC_API_KEY"),
        (ModelSpec("gemini", "gemini-2.5-pro"), "GEMINI_API_KEY or GOOGLE_API_KEY"),
    ],
)
def test_missing_key_names_the_variable(spec: ModelSpec, variable: str) -> None:
    with pytest.raises(MissingCredentialsError) as caught:
        check_ready(spec)
    assert caught.value.variable == variable
    assert variable in str(caught.value)
    assert isinstance(caught.value, UsageError)  # reported before the run starts


def test_keys_from_environment_make_specs_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-x")
    check_ready(ModelSpec("openai", "gpt-4o"))
    check_ready(ModelSpec("anthropic", "claude-opus-4-1"))


def test_local_openai_server_needs_no_key() -> None:
    check_ready(ModelSpec("openai", "gemma", base_url="http://127.0.0.1:8080/v1"))


@pytest.mark.parametrize(
    "base_url",
    [
        "https://api.openai.com/v1",
        "https://API.OpenAI.com/v1/",
        "api.openai.com/v1",
        "https://us.api.openai.com/v1",
        "https://api.openai.com.:443/v1",
    ],
)
def test_hosted_openai_base_url_still_needs_the_key(base_url: str) -> None:
    with pytest.raises(MissingCredentialsError) as caught:
        check_ready(ModelSpec("openai", "gpt-4o", base_url=base_url))
    assert caught.value.variable == "OPENAI_API_KEY"
    assert isinstance(caught.value, UsageError)


def test_hosted_openai_base_url_from_the_environment_needs_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    spec = resolve_spec(**NO_NODE, run_provider=None, run_model="gpt-4o", run_base_url=None)
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        check_ready(spec)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    check_ready(spec)


@pytest.mark.parametrize(
    "base_url",
    ["http://localhost:11434/v1", "http://myopenai.com/v1", "https://openai.com.evil.test/v1"],
)
def test_other_servers_need_no_key(base_url: str) -> None:
    check_ready(ModelSpec("openai", "local", base_url=base_url))


@pytest.mark.parametrize(
    ("provider", "module"), [("openai", "openai"), ("anthropic", "anthropic"), ("gemini", "google")]
)
def test_missing_sdk_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, provider: str, module: str
) -> None:
    # A None entry in sys.modules makes `import <module>` fail as if not installed.
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setenv("GEMINI_API_KEY", "gk-x")
    monkeypatch.delitem(sys.modules, f"attractor.llm.{provider}_model", raising=False)
    monkeypatch.delitem(sys.modules, "attractor.llm.openai_responses", raising=False)
    spec = ModelSpec(provider, "some-model", base_url="http://127.0.0.1:1")
    for action in (check_ready, build_model):
        with pytest.raises(ProviderNotInstalledError) as caught:
            action(spec)
        message = str(caught.value)
        assert message == (
            f"the {provider} provider needs its SDK: pip install 'attractor[{provider}]'"
        )


def test_importing_the_factory_does_not_import_sdks() -> None:
    code = (
        "import sys, attractor.llm.factory\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
        "assert 'anthropic' not in sys.modules, 'anthropic imported'\n"
        "assert 'google.genai' not in sys.modules, 'google-genai imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.anyio
async def test_built_local_model_sends_no_key_and_one_call_per_turn(
    server: FakeServer,
) -> None:
    server.add(Reply(body=openai_completion("hi")))
    model = build_model(ModelSpec("openai", "local-model", base_url=f"{server.url}/v1"))
    assert isinstance(model, Model)
    assert (model.provider, model.name) == ("openai", "local-model")
    try:
        await model.request(simple_request(tools=(READ_FILE,)))
    finally:
        await model.aclose()
        await model.aclose()  # closing twice is allowed
    [received] = server.received
    assert "authorization" not in received.headers
    assert received.body["parallel_tool_calls"] is False


def test_built_hosted_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-x")
    monkeypatch.setenv("GEMINI_API_KEY", "gk-x")
    openai_model = build_model(ModelSpec("openai", "gpt-4o"), stream=True)
    claude = build_model(ModelSpec("anthropic", "claude-opus-4-1", reasoning_effort="low"))
    gemini = build_model(ModelSpec("gemini", "gemini-2.5-pro"))
    assert (openai_model.provider, claude.provider) == ("openai", "anthropic")
    assert claude.name == "claude-opus-4-1"
    assert (gemini.provider, gemini.name) == ("gemini", "gemini-2.5-pro")


@pytest.mark.parametrize(
    ("base_url", "api"),
    [
        (None, OpenAIResponsesModel),
        ("https://api.openai.com/v1", OpenAIResponsesModel),
        ("http://127.0.0.1:8080/v1", OpenAIModel),
    ],
)
def test_openai_itself_gets_responses_and_other_servers_chat(
    monkeypatch: pytest.MonkeyPatch, base_url: str | None, api: type
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert type(build_model(ModelSpec("openai", "gpt-5", base_url=base_url))) is api


def test_retry_policy_default_is_bounded() -> None:
    policy = RetryPolicy()
    assert policy.max_retries >= 1
    assert all(policy.delay(n, None) <= policy.max_delay * 1.5 for n in range(10))
