"""``[acp_agents.NAME]`` tables: read from attractor.toml or pyproject.toml, each
mistake a one-line error naming the file, the table and what to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.config_file import AcpAgent
from attractor.errors import UsageError
from attractor.settings import resolve_settings
from tests.cli.runkit import write


def test_agents_come_from_attractor_toml(tmp_path: Path) -> None:
    write(
        tmp_path / "attractor.toml",
        '[acp_agents.claude]\ncommand = "npx"\nargs = ["-y", "adapter"]\n'
        'env = { KEY = "$KEY", MODE = "fast" }\n',
    )
    settings = resolve_settings(env={}, cwd=tmp_path)
    assert settings.acp_agents == {
        "claude": AcpAgent(
            "claude",
            "npx",
            ("-y", "adapter"),
            (("KEY", "$KEY"), ("MODE", "fast")),
            "attractor.toml: acp_agents.claude",
        )
    }


def test_agents_come_from_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.attractor.acp_agents.g]\ncommand = "gemini"\n')
    agent = resolve_settings(env={}, cwd=tmp_path).acp_agents["g"]
    assert (agent.command, agent.args, agent.env) == ("gemini", (), ())


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('acp_agents = "claude"', "acp_agents must be a table of agents"),
        ("[acp_agents.x]\nargs = []", "acp_agents.x: command must name the agent's program"),
        ('[acp_agents.x]\ncommand = "a"\nargs = "b"', "args must be a list of strings"),
        ('[acp_agents.x]\ncommand = "a"\nenv = { K = 1 }', "env must be a table of strings"),
        ('[acp_agents.x]\ncommand = "a"\nargv = []', "unknown key 'argv' (known: command, "),
        ('[acp_agents."a b"]\ncommand = "a"', "a name has only letters, digits"),
        ('[acp_agent.x]\ncommand = "a"', "unknown setting 'acp_agent'; did you mean acp_agents?"),
    ],
)
def test_a_bad_table_is_a_clear_error(tmp_path: Path, table: str, message: str) -> None:
    write(tmp_path / "attractor.toml", table + "\n")
    with pytest.raises(UsageError) as caught:
        resolve_settings(env={}, cwd=tmp_path)
    assert str(caught.value).startswith("attractor.toml: ")
    assert message in str(caught.value)
