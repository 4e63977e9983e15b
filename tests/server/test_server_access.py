"""Who may use the server, and which paths a pipeline it runs may name."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from tests.server.serverkit import Server, start_server

GUARDED_PATHS = ("/pipelines", "/pipelines/x/events", "/pipelines/x/graph")
#: The page and its scripts: the product's own files, nothing of a run's.
PUBLIC_PATHS = ("/", "/static/app.js")


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    """``attractor serve`` that is expected to refuse to start."""
    return subprocess.run(
        [sys.executable, "-m", "attractor", "serve", *args],
        capture_output=True, text=True, timeout=30,
        env={k: v for k, v in os.environ.items() if k != "ATTRACTOR_SERVE_TOKEN"},
    )  # fmt: skip


def test_a_loopback_server_makes_a_token_and_checks_it_on_every_request(root: Path) -> None:
    server = start_server(root)
    token_file = root / ".attractor" / "serve.token"
    try:
        assert server.token and token_file.read_text().strip() == server.token
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        port = server.url.rsplit(":", 1)[1]
        with httpx.Client(base_url=server.url, timeout=30) as bare:
            for path in GUARDED_PATHS:
                refused = bare.get(path)
                assert refused.status_code == 401, path
                assert "?token=" in refused.json()["error"]
                wrong = bare.get(path, headers={"Authorization": "Bearer wrong"})
                assert wrong.status_code == 401, path
            for path in PUBLIC_PATHS:
                assert bare.get(path).status_code == 200, path
            page = bare.get(f"/?token={server.token}")
            assert page.status_code == 200
            # No cookie: a browser would send one of 127.0.0.1 to every port of it,
            # another local user's server included.
            assert "set-cookie" not in page.headers
            cookie = {"Cookie": f"attractor_token_{port}={server.token}"}
            assert bare.get("/pipelines", headers=cookie).status_code == 401
            assert bare.get(f"/pipelines?token={server.token}").status_code == 200
            # What the page shows runs no script but its own files, in no other site's frame.
            headers = bare.get("/").headers
            assert "script-src 'self';" in headers["content-security-policy"]
            assert "frame-ancestors 'none'" in headers["content-security-policy"]
            assert headers["x-frame-options"] == "DENY"
            assert headers["x-content-type-options"] == "nosniff"
        with server.client() as client:
            assert client.get("/pipelines").status_code == 200
    finally:
        stderr = server.stop()
    assert stderr.count(f"?token={server.token}") == 1, stderr
    assert not token_file.exists()  # the token dies with the server


def test_no_token_is_honoured_on_loopback_only_and_keeps_the_host_check(root: Path) -> None:
    wide = _serve("--no-token", "--host", "0.0.0.0", "--root", str(root))
    assert wide.returncode == 2 and "loopback" in wide.stderr
    assert "Traceback" not in wide.stderr
    both = _serve("--no-token", "--token", "x", "--root", str(root))
    assert both.returncode == 2 and "exclude each other" in both.stderr
    # 127.0.0.2 is loopback too: its own address is accepted as Host.
    open_server = start_server(root, ["--no-token"], host="127.0.0.2")
    try:
        with open_server.client() as client:
            assert open_server.url.startswith("http://127.0.0.2:")
            assert client.get("/pipelines").status_code == 200
            assert client.get("/static/app.js").status_code == 200
            renamed = client.get("/pipelines", headers={"Host": "attacker.example"})
            assert renamed.status_code == 400  # a DNS-rebinding page is refused
    finally:
        open_server.stop()
    assert not (root / ".attractor" / "serve.token").exists()


def test_a_token_given_on_127_0_0_2_is_asked_for(root: Path) -> None:
    server = start_server(root, ["--token", "s3cret"], token="s3cret", host="127.0.0.2")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as bare:
            assert bare.get("/pipelines").status_code == 401
        with server.client() as client:
            assert client.get("/pipelines").status_code == 200
    finally:
        stderr = server.stop()
    assert "s3cret" not in stderr  # a token the user chose is not printed
    assert not (root / ".attractor" / "serve.token").exists()


MANAGER = """digraph parent {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    watch [shape=house, stack.child_dotfile="%s"]
    start -> watch -> done
}
"""


SUB_PIPELINE = """digraph parent {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    inline [shape=folder, dot_file="%s"]
    start -> inline -> done
}
"""


GATE_SHOWING = """digraph show {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    gate  [shape=hexagon, workdir="sub", human.show="%s"]
    start -> gate
    gate -> done [label="[A] Approve"]
}
"""


def _pipeline(node_attrs: str, graph_attrs: str = "") -> str:
    return f"""digraph escape {{
    {graph_attrs}
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [shape=parallelogram, tool_command="id > owned.txt", {node_attrs}]
    start -> work -> done
}}
"""


def test_a_pipeline_naming_a_path_outside_the_root_is_refused(
    server: Server, root: Path, tmp_path: Path
) -> None:
    (root / "sub").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "out").symlink_to(tmp_path / "elsewhere")
    (root / "child.dot").write_text(_pipeline('workdir="/tmp"'))
    (tmp_path / "outside.dot").write_text(_pipeline('workdir="sub"'))
    refused = {
        "node workdir": _pipeline('workdir="/etc"'),
        "node workdir through a link": _pipeline('workdir="out"'),
        "graph workdir": _pipeline("workdir=sub", 'workdir=".."'),
        "human.show": GATE_SHOWING % "../../.ssh/id_ed25519",
        "child pipeline outside": MANAGER % (tmp_path / "outside.dot"),
        "child pipeline's own workdir": MANAGER % "child.dot",
        "sub-pipeline outside": SUB_PIPELINE % (tmp_path / "outside.dot"),
        "sub-pipeline's own workdir": SUB_PIPELINE % (root / "child.dot"),
        "node writable": _pipeline(f'writable="sub,{tmp_path / "elsewhere"}"'),
        "node writable through a link": _pipeline('writable="out"'),
        "graph writable": _pipeline("workdir=sub", 'writable="../.."'),
    }
    with server.client() as client:
        for what, source in refused.items():
            response = client.post("/pipelines", json={"dot_source": source})
            assert response.status_code == 403, (what, response.text)
            assert "outside the server root" in response.json()["error"], what
        inside = _pipeline('workdir="sub", writable="sub"').replace("id >", "true >")
        allowed = client.post("/pipelines", json={"dot_source": inside})
        assert allowed.status_code == 201, allowed.text
        # A backend written with a space first is the same backend, confined the same.
        (tmp_path / "script.json").write_text("[]")
        scripted = {"backend": f" scripted:{tmp_path / 'script.json'}"}
        sneaked = client.post("/pipelines", json={"path": "gate.dot", "settings": scripted})
        assert sneaked.status_code == 403, sneaked.text
    assert not (Path("/etc") / "owned.txt").exists()
    assert not (tmp_path / "owned.txt").exists()


def test_a_run_behind_a_symbolic_link_that_leads_out_of_the_root_is_not_served(
    server: Server, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "gate.dot").write_text(
        "digraph g { start [shape=Mdiamond]; done [shape=Msquare]; start -> done }"
    )
    ran = subprocess.run(
        [sys.executable, "-m", "attractor", "run", "gate.dot", "--quiet", "--logs-dir", "run1"],
        cwd=outside, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    runs = root / ".attractor" / "runs"
    runs.mkdir(parents=True)
    (runs / "leak").symlink_to(outside / "run1")
    with server.client() as client:
        for path in ("/pipelines/leak", "/pipelines/leak/events", "/pipelines/leak/context"):
            response = client.get(path)
            assert response.status_code == 403, path
            assert "outside the server root" in response.json()["error"]
        assert "leak" not in [r["id"] for r in client.get("/pipelines").json()["runs"]]


def test_a_prompt_file_outside_the_root_is_refused_wherever_the_server_started(
    root: Path, tmp_path: Path
) -> None:
    """Started in a folder above its root (``cd ~ && attractor serve --root work``), the
    server reads no prompt file outside its root into a run, the model or its answers."""
    (tmp_path / "secret.txt").write_text("TOP-SECRET-OUTSIDE-ROOT\n")
    (root / "prompts").mkdir()
    (root / "prompts" / "plan.md").write_text("plan the work\n")
    source = """digraph p {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [prompt="@%s"]
    start -> work -> done
}
"""
    server = start_server(root, ["--no-token"], cwd=tmp_path)
    try:
        with server.client() as client:
            refused = client.post("/pipelines", json={"dot_source": source % "secret.txt"})
            assert refused.status_code == 403, refused.text
            assert "prompt=@secret.txt leads outside the server root" in refused.text
            assert "TOP-SECRET" not in refused.text
            (root / "p.dot").write_text(source % "prompts/plan.md")
            allowed = client.post("/pipelines", json={"path": "p.dot"})
            assert allowed.status_code == 201, allowed.text
    finally:
        server.stop()
    assert not any("TOP-SECRET" in p.read_text(errors="replace") for p in root.rglob("*.md"))


def test_only_runs_in_the_runs_folder_are_served(root: Path) -> None:
    """The root is a step's writable workdir, its ``.attractor`` is not: a folder a step
    made right in the root, that looks like a run (copied, with a stage folder linked
    out or a pipeline of its own), is neither listed, read nor resumed."""
    flow = "digraph f { start [shape=Mdiamond]; done [shape=Msquare]; start -> done }\n"
    (root / "f.dot").write_text(flow)
    real = root / ".attractor" / "runs" / "20990101T000000Z-f"
    fake = root / "20991231T000000Z-f"
    for logs in (real, fake):
        done = subprocess.run(
            [sys.executable, "-m", "attractor", "run", "f.dot", "--logs-dir", str(logs), "-q"],
            cwd=root, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    server = start_server(root)
    try:
        with server.client() as client:
            listed = [run["id"] for run in client.get("/pipelines").json()["runs"]]
            assert listed == [real.name]
            assert client.get(f"/pipelines/{real.name}").status_code == 200
            for path in ("", "/nodes/start", "/graph"):
                assert client.get(f"/pipelines/{fake.name}{path}").status_code == 404, path
            resumed = client.post(f"/pipelines/{fake.name}/resume", json={"from": "start"})
            assert resumed.status_code == 404
    finally:
        server.stop()
