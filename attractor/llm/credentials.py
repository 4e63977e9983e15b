"""Which API key goes to which host, and base URLs with their secrets taken out.

The rule: a provider's own key (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
``GEMINI_API_KEY``/``GOOGLE_API_KEY``) goes only to that provider's own service,
reached over https: no base URL, or a base URL on the provider's domain
(``openai.com``, ``anthropic.com``, ``googleapis.com``). Any other base URL (a
local server, a proxy, a gateway) gets no key at all unless the user names the
variable that holds the key for it (``--api-key-env NAME``,
``ATTRACTOR_API_KEY_ENV``, ``api_key_env`` in the config file). A named variable
is used wherever the model goes, the provider's own service included.

A base URL can carry a secret of its own (``https://user:pass@host``,
``?api_key=...``). :func:`redact_url` takes it out of everything attractor
writes down or prints: the run manifest, the dry-run plan, resume notes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from attractor.errors import MissingCredentialsError
from attractor.valueclass import frozen

#: Each provider's own key variables, in the order they are read.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
#: The domain each provider's own service lives under.
PROVIDER_DOMAINS = {
    "openai": "openai.com",
    "anthropic": "anthropic.com",
    "gemini": "googleapis.com",
}
#: Where each provider's SDK goes when no base URL is given.
DEFAULT_HOSTS = {
    "openai": "api.openai.com",
    "anthropic": "api.anthropic.com",
    "gemini": "generativelanguage.googleapis.com",
}
#: The flag, variable and config key that name a key for a custom base URL.
NAME_IT = "--api-key-env NAME (ATTRACTOR_API_KEY_ENV, or api_key_env in the config file)"
#: What a secret is replaced with in a recorded base URL.
REDACTED = "REDACTED"
#: Query parameters that carry no secret (API versions, response formats).
_PLAIN_QUERY = frozenset({"api-version", "api_version", "version", "alt", "format"})
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _split(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of ``url``, lowercased; parts it does not have are empty."""
    try:
        split = urlsplit(url if "//" in url else f"//{url}")
        host = (split.hostname or "").rstrip(".").lower()
    except ValueError:  # not a URL (an unclosed IPv6 bracket...)
        return "", "", None
    try:
        port = split.port
    except ValueError:  # a port that is not a number
        port = None
    return split.scheme.lower(), host, port


def host_of(provider: str, base_url: str | None) -> str:
    """The host a model of ``provider`` is reached at (for messages and the dry run)."""
    if base_url is None:
        return DEFAULT_HOSTS.get(provider, provider)
    _, host, port = _split(base_url)
    if not host:
        return redact_url(base_url)
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return f"{host}:{port}" if port is not None else host


def is_official(provider: str, base_url: str | None) -> bool:
    """True when ``base_url`` is ``provider``'s own service over https (or not given)."""
    if base_url is None:
        return True
    domain = PROVIDER_DOMAINS.get(provider)
    scheme, host, _ = _split(base_url)
    if domain is None or scheme not in ("https", ""):
        return False
    return host == domain or host.endswith("." + domain)


def check_variable_name(name: str) -> str:
    """``name`` if it can be an environment variable's name.

    Raises:
        ValueError: it cannot (the message says what is expected).
    """
    text = name.strip()
    if not _VARIABLE.fullmatch(text):
        raise ValueError("expected the name of an environment variable, like MY_PROXY_KEY")
    return text


@frozen
class KeyPlan:
    """Which variables' key goes to which host for one model.

    Attributes:
        provider: The model's provider.
        host: Where requests go (``api.openai.com``, ``127.0.0.1:8080``).
        variables: The variables read for the key, first set wins; empty: no key is sent.
        named: The variable was named by the user (``api_key_env``).
    """

    provider: str
    host: str
    variables: tuple[str, ...]
    named: bool

    def describe(self) -> str:
        """One line for the dry run: the variable (never its value) and the host."""
        if self.variables:
            how = "named by api_key_env" if self.named else "the provider's own service"
            return f"key: {' or '.join(self.variables)} sent to {self.host} ({how})"
        return (
            f"key: none sent to {self.host} (a base URL other than the provider's own "
            f"service gets a key only when one is named: {NAME_IT})"
        )


def key_plan(provider: str, base_url: str | None, api_key_env: str | None) -> KeyPlan:
    """What :func:`resolve_key` will send for ``provider`` at ``base_url``."""
    host = host_of(provider, base_url)
    if api_key_env:
        return KeyPlan(provider, host, (api_key_env,), True)
    if is_official(provider, base_url):
        return KeyPlan(provider, host, PROVIDER_KEYS.get(provider, ()), False)
    return KeyPlan(provider, host, (), False)


def resolve_key(
    provider: str,
    base_url: str | None,
    *,
    api_key: str | None = None,
    api_key_env: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """The key to send, or None to send none (see the module docstring).

    ``api_key`` given in code is used as is.

    Raises:
        MissingCredentialsError: the variables the plan reads are all unset.
    """
    if api_key:
        return api_key
    plan = key_plan(provider, base_url, api_key_env)
    if not plan.variables:
        return None
    env = os.environ if env is None else env
    key = next((env[v] for v in plan.variables if env.get(v)), None)
    if key is None:
        raise MissingCredentialsError(provider, " or ".join(plan.variables))
    return key


def redact_url(url: str) -> str:
    """``url`` without the secrets it may carry: user info, query values, fragment.

    User info and query values become ``REDACTED`` (so a reader, and a resume,
    can tell something was taken out), except query parameters known to carry
    no secret (``api-version``...). Text that is not a URL comes back as it was.
    """
    try:
        split = urlsplit(url)
    except ValueError:
        return url
    user, at, host = split.netloc.rpartition("@")
    netloc = f"{REDACTED}@{host}" if at else host
    query = "&".join(_redact_pair(k, v) for k, v in _pairs(split.query))
    return urlunsplit((split.scheme, netloc, split.path, query, ""))


def _pairs(query: str) -> list[tuple[str, str | None]]:
    """The ``key=value`` parts of ``query``; a part with no ``=`` has value None."""
    parts = [part.partition("=") for part in query.split("&") if part]
    return [(k, v if sep else None) for k, sep, v in parts]


def _redact_pair(key: str, value: str | None) -> str:
    if value is None:  # a bare token ("?sk-abc") may itself be the secret
        return key if key.lower() in _PLAIN_QUERY else REDACTED
    return f"{key}={value if key.lower() in _PLAIN_QUERY else REDACTED}"


def lost_secret(recorded: str) -> bool:
    """True when ``recorded`` (a :func:`redact_url` result) had a secret taken out."""
    split = urlsplit(recorded)
    parts = [value if value is not None else key for key, value in _pairs(split.query)]
    return split.netloc.startswith(REDACTED + "@") or REDACTED in parts
