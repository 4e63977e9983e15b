"""The agent CLIs attractor can run as codergen backends, by backend name."""

from __future__ import annotations

from attractor.handlers.external.claude import CLAUDE
from attractor.handlers.external.codex import CODEX
from attractor.handlers.external.gemini import GEMINI
from attractor.handlers.external.spec import AgentCli

AGENTS: dict[str, AgentCli] = {cli.name: cli for cli in (CLAUDE, CODEX, GEMINI)}
