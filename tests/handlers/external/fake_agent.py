"""A stand-in for the ``claude``, ``codex`` and ``gemini`` executables.

Installed on PATH under each CLI's name (see ``agentkit.install_fakes``), it
answers the login checks and replays a recorded stream of the CLI it is named
after: ``streams/<cli>/<scenario>.jsonl``, the scenario being the word after
``SCENARIO=`` in the prompt it reads on stdin (default ``success``). Lines with
a ``_fake`` key are directions, not output: ``exit`` (code, stderr text),
``hang`` (start a child in the same process group, then wait to be killed),
``hang_once`` (hang unless a ``.fake_agent_hung`` file in the working directory
says it hung before; then go on replaying).

Environment: ``FAKE_AGENT_LOG`` (a file that gets one JSON line per start:
argv, cwd, pid, prompt, environment), ``FAKE_AGENT_LOGGED_OUT`` (login checks fail).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

STREAMS = Path(__file__).with_name("streams")
CLIS = {"claude": "claude", "codex": "codex", "gemini": "gemini"}


def main() -> int:
    cli = CLIS[str(globals().get("AS") or Path(sys.argv[0]).name)]
    args = sys.argv[1:]
    if args[:2] in (["auth", "status"], ["login", "status"]):
        return _status(cli)
    if args[:1] in (["--version"], ["-v"], ["-V"]):
        print({"claude": "2.1.330 (Claude Code)", "codex": "codex-cli 0.169.0"}.get(cli, "0.61.0"))
        return 0
    prompt = sys.stdin.read()
    found = re.search(r"SCENARIO=(\w+)", prompt)
    scenario = found.group(1) if found else "success"
    _log(
        {
            "cli": cli,
            "argv": args,
            "cwd": os.getcwd(),
            "pid": os.getpid(),
            "prompt": prompt,
            "env": dict(os.environ),
        }
    )
    return _replay(STREAMS / cli / f"{scenario}.jsonl")


def _status(cli: str) -> int:
    if os.environ.get("FAKE_AGENT_LOGGED_OUT"):
        if cli == "claude":
            print("Not logged in. Run claude auth login to authenticate.")
        else:
            print("Not logged in", file=sys.stderr)
        return 1
    print("Logged in using an API key")
    return 0


def _log(entry: dict[str, object]) -> None:
    path = os.environ.get("FAKE_AGENT_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")


def _replay(stream: Path) -> int:
    for line in stream.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        direction = event.get("_fake")
        if direction == "exit":
            if event.get("stderr"):
                print(event["stderr"], file=sys.stderr, flush=True)
            return int(event["code"])
        if direction == "hang":
            return _hang()
        if direction == "hang_once":
            marker = Path(".fake_agent_hung")
            if not marker.exists():
                marker.write_text("")
                return _hang()
            continue
        print(line, flush=True)
    return 0


def _hang() -> int:
    """Wait to be stopped, with a child in the group that must not survive us."""
    child = subprocess.Popen(["sleep", "300"])
    _log({"child_pid": child.pid})
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())
