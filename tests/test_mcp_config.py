"""``[mcp_servers.NAME]`` in attractor.toml or ``[tool.attractor]``: checked, expanded, redacted."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.errors import UsageError
from attractor.mcp_config import McpServerConfig, mcp_servers_of
from attractor.settings import redactor_for, resolve_settings


def _settings(tmp_path: Path, name: str, text: str) -> dict[str, McpServerConfig]:
    (tmp_path / name).write_text(text)
    return resolve_settings({}, env={}, cwd=tmp_path).mcp_servers


def test_attractor_toml_and_pyproject_define_servers(tmp_path: Path) -> None:
    servers = _settings(
        tmp_path,
        "attractor.toml",
        '[mcp_servers.tracker]\ncommand = "tracker-mcp"\nargs = ["--project", "web"]\n'
        'env = { TOKEN = "${TRACKER_TOKEN}" }\nstartup_timeout = "20s"\ncall_timeout = 90\n',
    )
    tracker = servers["tracker"]
    assert (tracker.command, tracker.args, tracker.env) == (
        "tracker-mcp",
        ("--project", "web"),
        (("TOKEN", "${TRACKER_TOKEN}"),),
    )
    assert (tracker.startup_timeout, tracker.call_timeout) == (20.0, 90.0)
    assert tracker.source == "attractor.toml: mcp_servers.tracker"
    other = tmp_path / "other"
    other.mkdir()
    from_pyproject = _settings(
        other,
        "pyproject.toml",
        '[tool.attractor.mcp_servers.docs]\nurl = "https://docs.example/mcp"\n'
        'headers = { Authorization = "Bearer ${DOCS_TOKEN}" }\n',
    )
    assert from_pyproject["docs"].transport == "http"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"x": {"command": "a", "url": "http://b"}}, "give either command"),
        ({"x": {}}, "give either command"),
        ({"x": {"command": "a", "comand": "b"}}, "unknown key 'comand'"),
        ({"x": {"url": "ftp://b"}}, "url must start with http:// or https://"),
        ({"x": {"url": "http://b", "args": ["a"]}}, "args does not apply to an HTTP server"),
        ({"x": {"command": "a", "headers": {"A": "b"}}}, "headers does not apply to a stdio"),
        ({"x": {"command": "a", "args": "one"}}, "args must be a list of strings"),
        ({"x": {"command": "a", "env": {"A": 1}}}, "env must be a table of strings"),
        ({"x": {"command": "a", "call_timeout": "soon"}}, "call_timeout must be a time"),
        ({"x": {"command": "a", "call_timeout": 0}}, "call_timeout must be a time"),
        ({"a__b": {"command": "a"}}, "letters, digits, - and single _"),
        ({"x": "tracker-mcp"}, "must be a table"),
    ],
)
def test_a_bad_table_is_one_clear_error(table: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        mcp_servers_of("attractor.toml", {"mcp_servers": table})
    assert str(caught.value).startswith("attractor.toml: mcp_servers")


def test_variables_expand_when_a_step_starts_the_server() -> None:
    server = McpServerConfig(
        "docs",
        url="http://x",
        headers=(("Authorization", "Bearer ${DOCS_TOKEN}"),),
        source="attractor.toml: mcp_servers.docs",
    )
    assert server.expanded({"DOCS_TOKEN": "abc"}).headers == (("Authorization", "Bearer abc"),)
    with pytest.raises(UsageError, match=r"names \$\{DOCS_TOKEN\}, which is not set"):
        server.expanded({})


def test_the_variables_a_server_names_are_redacted(tmp_path: Path) -> None:
    (tmp_path / "attractor.toml").write_text(
        '[mcp_servers.docs]\nurl = "http://x"\nheaders = { X-Key = "${PLAIN_NAME}" }\n'
    )
    settings = resolve_settings({}, env={}, cwd=tmp_path)
    redactor = redactor_for(settings, {"PLAIN_NAME": "value-of-the-secret-1234"})
    assert redactor.text("sent value-of-the-secret-1234") == "sent [redacted:PLAIN_NAME]"
