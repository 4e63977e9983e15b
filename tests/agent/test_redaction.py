"""What the model's provider receives holds no secret of the run (attractor.redact)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from attractor import redact
from attractor.agent.session import AgentSession, SessionConfig
from attractor.agent.tools import default_registry
from attractor.agent.transcript import Transcript
from attractor.llm.scripted import ScriptedModel, ScriptedResponse, request_to_json
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.environment import LocalEnvironment
from attractor.redact import Redactor

from ._helpers import Recorder

TOKEN = "dt-5a4b3c2d1e0f9a8b"
AWS = "AKIAQWERTYUIOPASDFGH"


@pytest.fixture
def redacting(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A run's redactor, with DEPLOY_TOKEN in the environment its commands inherit."""
    monkeypatch.setenv("DEPLOY_TOKEN", TOKEN)
    token = redact.CURRENT.set(Redactor.from_environment({"DEPLOY_TOKEN": TOKEN}))
    yield
    redact.CURRENT.reset(token)


async def _session(tmp_path: Path, model: ScriptedModel, prompt: str) -> Path:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "aws.ini").write_text(f"key = {AWS}\n")
    session = AgentSession(
        model,
        SessionConfig(
            node_id="work",
            prompt=prompt,
            workdir=workdir,
            max_turns=5,
            # The shell sees the secrets, on purpose (the default environment drops them).
            environment=LocalEnvironment(workdir, EnvPolicy("inherit")),
        ),
        tools=default_registry(),
        transcript=Transcript(tmp_path / "stage"),
        emit=Recorder(),
    )
    await session.run()
    return workdir


@pytest.mark.anyio
@pytest.mark.usefixtures("redacting")
async def test_the_provider_never_receives_a_secret_a_command_printed(tmp_path: Path) -> None:
    look = (("shell", {"command": "printenv DEPLOY_TOKEN"}), ("read_file", {"path": "aws.ini"}))
    model = ScriptedModel([ScriptedResponse("looking", look), ScriptedResponse("done")])

    await _session(tmp_path, model, f"deploy with {TOKEN}")

    sent = json.dumps([request_to_json(r) for r in model.requests])
    assert TOKEN not in sent and AWS not in sent
    assert "deploy with [redacted:DEPLOY_TOKEN]" in sent  # the prompt
    assert "[redacted:DEPLOY_TOKEN]\\n[exit code 0]" in sent  # the shell's output
    assert "key = [redacted:aws-access-key]" in sent  # the file read


@pytest.mark.anyio
@pytest.mark.usefixtures("redacting")
async def test_a_placeholder_is_never_written_over_the_secret(tmp_path: Path) -> None:
    writes = (
        ("write_file", {"path": "aws.ini", "content": "key = [redacted:aws-access-key]\n"}),
        ("shell", {"command": "echo '[redacted:DEPLOY_TOKEN]' > token.txt"}),
    )
    model = ScriptedModel([ScriptedResponse("saving", writes), ScriptedResponse("done")])

    workdir = await _session(tmp_path, model, "tidy the config")

    assert (workdir / "aws.ini").read_text() == f"key = {AWS}\n"
    assert not (workdir / "token.txt").exists()
    answers = [m for m in request_to_json(model.requests[-1])["messages"] if m["role"] == "tool"]
    assert len(answers) == 2
    assert all("its arguments hold a [redacted:...] placeholder" in str(a) for a in answers)
