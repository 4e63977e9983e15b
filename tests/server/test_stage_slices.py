"""Paging through a stage file (the MCP ``read_stage`` tool): no page shows a secret."""

from __future__ import annotations

from pathlib import Path

from attractor.redact import Redactor
from attractor.server.output import stage_slice

TOKEN = "zQ8vN3kLpW7rT2yX9mB4cF6hJ1"


def test_no_page_of_a_file_not_yet_scrubbed_shows_a_secret_cut_by_its_edge(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    stage = run_dir / "work"
    stage.mkdir(parents=True)
    # A server's stderr while the step still runs: written raw, scrubbed only at its end.
    raw = f"starting\nkey {TOKEN} loaded\nready\n"
    (stage / "mcp-x.stderr.log").write_text(raw)
    redact = Redactor({TOKEN: "MY_SERVICE_TOKEN"}).text
    pages: list[str] = []
    for offset in range(0, 60):
        for limit in (1, 5, 12, 20, 64):
            data, size, after = stage_slice(
                run_dir, stage, "mcp-x.stderr.log", offset, limit, redact
            )
            pages.append(data.decode())
            assert after == offset + len(data) and size == len(redact(raw))
    # Read in pages from the start, the file is the redacted text whole.
    whole, offset = "", 0
    while True:
        data, size, offset = stage_slice(run_dir, stage, "mcp-x.stderr.log", offset, 7, redact)
        whole += data.decode()
        if offset >= size:
            break
    assert whole == "starting\nkey [redacted:MY_SERVICE_TOKEN] loaded\nready\n"
    # No page, whatever its offset and length, holds 6 characters of the token.
    pieces = {TOKEN[i : i + 6] for i in range(len(TOKEN) - 5)}
    assert not any(piece in page for page in pages for piece in pieces)
