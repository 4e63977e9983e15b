"""Which key goes where: a provider's key only to its own service, a custom base URL
only the key named for it, and no secret of a base URL written down or printed.

Every model here talks to a real HTTP server on 127.0.0.1 that records the
headers it receives, with the provider keys set in the environment as a user's
shell would have them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from attractor.cli.main import cli
from attractor.errors import MissingCredentialsError, SettingError, UsageError
from attractor.llm.credentials import key_plan, lost_secret, redact_url
from attractor.llm.factory import ModelSpec, build_model, check_ready, resolve_spec
from attractor.settings import record_of, resolve_settings
from tests.cli.runkit import clean_env
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.wire import anthropic_message, openai_completion, simple_request
from tests.llm.wire_responses import gemini_reply

SECRETS = {
    "OPENAI_API_KEY": "sk-openai-SECRET",
    "OPENAI_ADMIN_KEY": "admin-SECRET",
    "OPENAI_ORG_ID": "org-SECRET",
    "OPENAI_PROJECT_ID": "proj-SECRET",
    "ANTHROPIC_API_KEY": "ak-anthropic-SECRET",
    "ANTHROPIC_AUTH_TOKEN": "tok-anthropic-SECRET",
    "GEMINI_API_KEY": "gk-gemini-SECRET",
}
PROXY_KEY = "px-named-key"


@pytest.fixture
def user_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every provider credential a user may have exported, and one key for a proxy."""
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PROXY_KEY", PROXY_KEY)


def leaked(server: FakeServer) -> list[str]:
    """Every request header value that carries one of the user's secrets."""
    return [
        f"{name}: {value}"
        for received in server.received
        for name, value in received.headers.items()
        if "SECRET" in value
    ]


async def ask(spec: ModelSpec) -> None:
    model = build_model(spec)
    try:
        await model.request(simple_request())
    finally:
        await model.aclose()


REPLIES = {
    "openai": lambda: Reply(body=openai_completion("hi")),
    "anthropic": lambda: Reply(body=anthropic_message([{"type": "text", "text": "hi"}])),
    "gemini": lambda: Reply(body=gemini_reply([{"text": "hi"}])),
}
KEY_HEADERS = {"openai": "authorization", "anthropic": "x-api-key", "gemini": "x-goog-api-key"}


def _url(provider: str, server: FakeServer) -> str:
    return f"{server.url}/v1" if provider == "openai" else server.url


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_a_custom_base_url_gets_no_key_by_default(
    server: FakeServer, user_keys: None, provider: str
) -> None:
    server.add(REPLIES[provider]())
    spec = ModelSpec(provider, "some-model", base_url=_url(provider, server))
    check_ready(spec)  # no key is needed, so none is missing
    await ask(spec)
    [received] = server.received
    assert leaked(server) == []
    assert not received.headers.get(KEY_HEADERS[provider])
    assert "authorization" not in received.headers


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_a_named_variable_sends_its_key_and_nothing_else(
    server: FakeServer, user_keys: None, provider: str
) -> None:
    server.add(REPLIES[provider]())
    await ask(ModelSpec(provider, "m", base_url=_url(provider, server), api_key_env="PROXY_KEY"))
    [received] = server.received
    # Anthropic's SDK releases differ in the header the key goes in.
    sent = received.headers.get(KEY_HEADERS[provider]) or received.headers.get("authorization")
    assert sent in (PROXY_KEY, f"Bearer {PROXY_KEY}")
    assert leaked(server) == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("provider", "variable"),
    [("openai", "OPENAI_BASE_URL"), ("anthropic", "ANTHROPIC_BASE_URL")],
)
async def test_the_sdks_own_base_url_variable_is_a_custom_base_url_too(
    server: FakeServer,
    user_keys: None,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    variable: str,
) -> None:
    monkeypatch.setenv(variable, _url(provider, server))
    server.add(REPLIES[provider]())
    model = "gpt-4o" if provider == "openai" else "claude-test"
    spec = resolve_spec(
        node_provider=None,
        node_model=None,
        node_reasoning_effort=None,
        run_provider=None,
        run_model=model,
        run_base_url=None,
    )
    await ask(spec)
    assert len(server.received) == 1 and leaked(server) == []


def test_a_named_variable_that_is_not_set_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    spec = ModelSpec("openai", "m", base_url="http://127.0.0.1:9/v1", api_key_env="NOT_SET_KEY")
    with pytest.raises(MissingCredentialsError, match="set NOT_SET_KEY in the environment"):
        check_ready(spec)


@pytest.mark.parametrize(
    ("provider", "base_url", "variables"),
    [
        ("openai", None, ("OPENAI_API_KEY",)),
        ("openai", "https://api.openai.com/v1", ("OPENAI_API_KEY",)),
        ("openai", "https://eu.api.openai.com/v1", ("OPENAI_API_KEY",)),
        ("openai", "http://api.openai.com/v1", ()),  # not over https
        ("openai", "https://openai.com.evil.test/v1", ()),
        ("openai", "https://api.openai.com@evil.test/v1", ()),
        ("anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",)),
        ("anthropic", "https://api.openai.com/v1", ()),  # another provider's host
        ("gemini", None, ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
        ("gemini", "http://127.0.0.1:8080", ()),
    ],
)
def test_a_providers_key_goes_only_to_its_own_service(
    provider: str, base_url: str | None, variables: tuple[str, ...]
) -> None:
    assert key_plan(provider, base_url, None).variables == variables


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://gw.test/v1?api_key=sk-1&api-version=2024-06-01",
         "https://gw.test/v1?api_key=REDACTED&api-version=2024-06-01"),
        ("https://bob:hunter2@gw.test/v1", "https://REDACTED@gw.test/v1"),
        ("https://gw.test/v1?sk-bare-token", "https://gw.test/v1?REDACTED"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    ],
)  # fmt: skip
def test_secrets_are_taken_out_of_a_base_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert lost_secret(shown) == (shown != url)


# -- through the CLI -------------------------------------------------------------

PIPELINE = """digraph creds {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [prompt="Do the work"]
    start -> work -> done
}
"""


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_cli(workspace: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    (workspace / "p.dot").write_text(PIPELINE, encoding="utf-8")
    overlay: dict[str, str | None] = clean_env({**SECRETS, "PROXY_KEY": PROXY_KEY, **(env or {})})
    argv = ["run", "p.dot", "--provider", "openai", "--model", "gpt-5", *args]
    return CliRunner().invoke(cli, argv, env=overlay, catch_exceptions=False)


def secrets_in(folder: Path) -> list[str]:
    """Files under ``folder`` that hold a secret of the base URL or a key."""
    return [
        str(path)
        for path in folder.rglob("*")
        if path.is_file()
        and any(s in path.read_bytes() for s in (b"SECRET", b"sk-in-url", b"hunter2"))
    ]


def test_run_sends_no_key_to_a_custom_base_url_and_records_no_secret(workspace: Path) -> None:
    with FakeServer([Reply(body=openai_completion("done"))]).running() as server:
        base = server.url.replace("http://", "http://bob:hunter2@") + "/v1?api_key=sk-in-url"
        result = run_cli(workspace, "--base-url", base, "--logs-dir", str(workspace / "runs" / "r"))
    assert result.exit_code == 0, result.output
    [received] = server.received
    # The URL's own user info goes to its host as Basic auth; no provider key does.
    assert not received.headers.get("authorization", "").startswith("Bearer")
    assert leaked(server) == []
    manifest = json.loads((workspace / "runs" / "r" / "manifest.json").read_text())
    assert manifest["settings"]["base_url"].endswith("/v1?api_key=REDACTED")
    assert "REDACTED@127.0.0.1" in manifest["settings"]["base_url"]
    assert secrets_in(workspace / "runs") == []
    assert "sk-in-url" not in result.output and "hunter2" not in result.output


def test_run_sends_the_named_key_to_a_custom_base_url(workspace: Path) -> None:
    with FakeServer([Reply(body=openai_completion("done"))]).running() as server:
        result = run_cli(workspace, "--base-url", f"{server.url}/v1", "--api-key-env", "PROXY_KEY")
    assert result.exit_code == 0, result.output
    [received] = server.received
    assert received.headers["authorization"] == f"Bearer {PROXY_KEY}"
    assert leaked(server) == []


def test_dry_run_names_the_variable_and_host_never_the_value(workspace: Path) -> None:
    url = "http://127.0.0.1:9/v1?api_key=sk-in-url"
    plain = run_cli(workspace, "--dry-run", "--base-url", url)
    named = run_cli(workspace, "--dry-run", "--base-url", url, "--api-key-env", "PROXY_KEY")
    official = run_cli(workspace, "--dry-run")
    assert plain.exit_code == named.exit_code == official.exit_code == 0
    assert "key: none sent to 127.0.0.1:9 (" in plain.stdout
    assert "key: PROXY_KEY sent to 127.0.0.1:9 (named by api_key_env)" in named.stdout
    assert "key: OPENAI_API_KEY sent to api.openai.com" in official.stdout
    assert "at http://127.0.0.1:9/v1?api_key=REDACTED;" in plain.stdout
    # A key named for the environment's base URL does not follow one from a flag.
    env = {"ATTRACTOR_BASE_URL": "https://proxy.test/v1", "ATTRACTOR_API_KEY_ENV": "PROXY_KEY"}
    moved = run_cli(workspace, "--dry-run", "--base-url", url, env=env)
    assert moved.exit_code == 0, moved.output
    assert "key: none sent to 127.0.0.1:9 (" in moved.stdout
    assert "api_key_env not applied: ATTRACTOR_API_KEY_ENV names a key for another" in moved.stdout
    for result in (plain, named, official, moved):
        assert "SECRET" not in result.output and PROXY_KEY not in result.output
        assert "sk-in-url" not in result.output


# -- the rule in the settings ------------------------------------------------------


def test_a_key_named_for_one_base_url_does_not_follow_another(tmp_path: Path) -> None:
    """A base URL from a higher source (a flag, a request to the server) gets no key
    named in the environment or config file for the base URL given there."""
    env = {"ATTRACTOR_BASE_URL": "https://proxy.test/v1", "ATTRACTOR_API_KEY_ENV": "PROXY_KEY"}
    with_own_url = resolve_settings({}, env=env, cwd=tmp_path)
    assert with_own_url.api_key_env == "PROXY_KEY"
    elsewhere = resolve_settings({"base_url": "http://evil.test/v1"}, env=env, cwd=tmp_path)
    assert elsewhere.api_key_env is None
    assert elsewhere.source("api_key_env").startswith("not applied: ATTRACTOR_API_KEY_ENV")
    same_url = resolve_settings({"base_url": "https://proxy.test/v1"}, env=env, cwd=tmp_path)
    assert same_url.api_key_env == "PROXY_KEY"
    named_with_it = {"base_url": "http://evil.test/v1", "api_key_env": "OTHER_KEY"}
    assert resolve_settings(named_with_it, env=env, cwd=tmp_path).api_key_env == "OTHER_KEY"
    # Named for no base URL: the provider's own service, or a URL given anywhere below.
    (tmp_path / "attractor.toml").write_text('base_url = "http://127.0.0.1:8080/v1"\n')
    below = resolve_settings({}, env={"ATTRACTOR_API_KEY_ENV": "LOCAL_KEY"}, cwd=tmp_path)
    assert below.api_key_env == "LOCAL_KEY"


def test_a_bad_variable_name_is_refused_naming_its_source(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match='--api-key-env="sk-123 456": expected the name'):
        resolve_settings({"api_key_env": "sk-123 456"}, env={}, cwd=tmp_path)


def test_a_resumed_run_asks_again_for_a_base_url_that_lost_a_secret(tmp_path: Path) -> None:
    settings = resolve_settings(
        {"base_url": "https://gw.test/v1?key=sk-1", "api_key_env": "PROXY_KEY"},
        env={},
        cwd=tmp_path,
    )
    recorded = record_of(settings)
    assert recorded["base_url"] == "https://gw.test/v1?key=REDACTED"
    assert recorded["api_key_env"] == "PROXY_KEY"  # a name, never a key
    with pytest.raises(UsageError, match="carried a secret, which was not recorded"):
        resolve_settings({}, env={}, cwd=tmp_path, recorded=recorded)
    again = resolve_settings(
        {"base_url": "https://gw.test/v1?key=sk-1"}, env={}, cwd=tmp_path, recorded=recorded
    )
    assert again.base_url == "https://gw.test/v1?key=sk-1"


@pytest.mark.anyio
async def test_a_base_url_with_a_query_keeps_it_after_the_path(
    server: FakeServer, user_keys: None
) -> None:
    """``http://host/v1?api-version=1`` asks ``/v1/chat/completions?api-version=1``."""
    server.add(REPLIES["openai"]())
    await ask(ModelSpec("openai", "m", base_url=f"{server.url}/v1?api-version=2024-10"))
    [received] = server.received
    assert received.path == "/v1/chat/completions?api-version=2024-10"
    assert leaked(server) == []
