"""How deep the first model request of a run sits: our frames from the CLI down.

Run: ``python benchmarks/frames_to_model.py``. Runs ``attractor run`` in this
process on a one-node pipeline with the scripted model and, at the model's
first request, counts the frames of the stack that are attractor's own: in all,
how many files they are in, and how many are in the engine's driver
(``engine/run.py``). A figure for the readability of the driver, not a timing.
"""

from __future__ import annotations

import json
import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path

import attractor
from attractor.llm.scripted import ScriptedModel

PACKAGE = Path(attractor.__file__).resolve().parent

PIPELINE = """digraph frames {
  start [shape=Mdiamond]
  done [shape=Msquare]
  work [prompt="Say hi."]
  start -> work -> done
}
"""


def main() -> None:
    seen: list[traceback.FrameSummary] = []
    request = ScriptedModel.request

    async def counting(self: ScriptedModel, req: object) -> object:
        if not seen:
            seen.extend(traceback.extract_stack())
        return await request(self, req)  # type: ignore[arg-type]

    ScriptedModel.request = counting  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "p.dot").write_text(PIPELINE)
        (folder / "script.json").write_text(json.dumps({"responses": [{"text": "hi"}]}))
        from click.testing import CliRunner

        from attractor.cli.main import cli

        args = ["run", str(folder / "p.dot"), "--backend", f"scripted:{folder / 'script.json'}"]
        args += ["--logs-dir", str(folder / "runs"), "--workdir", str(folder)]
        outcome = CliRunner().invoke(cli, args)
        if outcome.exit_code != 0 or not seen:
            sys.exit(f"the run did not reach the model: exit {outcome.exit_code}\n{outcome.output}")
    ours = [f for f in seen[:-1] if Path(f.filename).resolve().is_relative_to(PACKAGE)]
    files = Counter(str(Path(f.filename).resolve().relative_to(PACKAGE)) for f in ours)
    print(f"our frames from the CLI to the first model request: {len(ours)} in {len(files)} files")
    print(f"frames in engine/run.py: {files.get('engine/run.py', 0)}")
    for frame in ours:
        where = Path(frame.filename).resolve().relative_to(PACKAGE)
        print(f"  {where}:{frame.lineno} {frame.name}")


if __name__ == "__main__":
    main()
