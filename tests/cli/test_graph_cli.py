"""``attractor graph``: the picture checked as SVG structure, not pixels."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.cli.runkit import invoke, only_run_dir, write

SVG = "{http://www.w3.org/2000/svg}"
FAILING = """digraph broken_build {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    fetch [shape=parallelogram, tool_command="echo fetched"]
    build [shape=parallelogram, tool_command="echo nope >&2; exit 3"]
    check [shape=diamond]
    start -> fetch -> build -> check
    deploy [shape=parallelogram, tool_command="echo deployed"]
    report [shape=parallelogram, tool_command="echo reported"]
    check -> deploy [label="ok", condition="outcome=success"]
    check -> report [label="again", condition="outcome!=success"]
    deploy -> done
    report -> done
}
"""


def _nodes(svg: str) -> dict[str, ET.Element]:
    root = ET.fromstring(svg)
    return {
        g.attrib["id"].removeprefix("node-"): g
        for g in root.iter(f"{SVG}g")
        if "node" in g.attrib.get("class", "").split()
    }


def _fill(group: ET.Element) -> str:
    shape = next(e for e in group.iter() if e.tag in (f"{SVG}polygon", f"{SVG}ellipse"))
    return shape.attrib["fill"]


def test_graph_draws_every_node_with_its_shape_and_edge_labels(workspace: Path) -> None:
    write(workspace / "p.dot", FAILING)
    result = invoke(["graph", "p.dot"])
    assert result.exit_code == 0, result.stderr
    nodes = _nodes(result.stdout)
    assert set(nodes) == {"start", "done", "fetch", "build", "check", "deploy", "report"}
    assert {n.attrib["class"] for n in nodes.values()} == {"node state-pending"}
    texts = [t.text for t in ET.fromstring(result.stdout).iter(f"{SVG}text")]
    assert "ok [outcome=success]" in texts and "again [outcome!=success]" in texts


def test_graph_of_a_run_colours_nodes_by_state_and_bolds_the_route(workspace: Path) -> None:
    pipeline = write(workspace / "p.dot", FAILING)
    ran = invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}", "--quiet"])
    assert ran.exit_code == 0, ran.stderr
    run_dir = only_run_dir(workspace / "runs")
    result = invoke(["graph", str(pipeline), "--run", str(run_dir)])
    assert result.exit_code == 0, result.stderr
    nodes = _nodes(result.stdout)
    states = {k: v.attrib["class"].split()[1] for k, v in nodes.items()}
    assert states == {
        "start": "state-success",
        "fetch": "state-success",
        "build": "state-fail",
        "check": "state-fail",  # a conditional passes its input through
        "deploy": "state-pending",
        "report": "state-success",
        "done": "state-success",
    }
    assert _fill(nodes["fetch"]) == "#86efac"
    assert _fill(nodes["build"]) == "#fca5a5"
    assert _fill(nodes["deploy"]) == "#f4f4f5"
    taken = {
        g.attrib["id"]
        for g in ET.fromstring(result.stdout).iter(f"{SVG}g")
        if "taken" in g.attrib.get("class", "")
    }
    assert taken == {
        "edge-start-fetch", "edge-fetch-build", "edge-build-check", "edge-check-report",
        "edge-report-done",
    }  # fmt: skip


def test_graph_writes_png_and_pdf_files(workspace: Path) -> None:
    write(workspace / "p.dot", FAILING)
    for name, magic in (("p.png", b"\x89PNG"), ("p.pdf", b"%PDF")):
        result = invoke(["graph", "p.dot", "-o", name])
        assert result.exit_code == 0, result.stderr
        assert (workspace / name).read_bytes().startswith(magic)


def test_graph_refuses_bad_input_in_one_line(workspace: Path) -> None:
    write(workspace / "p.dot", FAILING)
    write(workspace / "bad.dot", "digraph bad { a -> b }")
    cases = [
        (["graph", "p.dot", "-o", "p.gif"], "name a .svg, .png or .pdf file"),
        (["graph", "p.dot", "--run", "."], "not a run directory"),
        (["graph", "missing.dot"], "no such pipeline file"),
        (["graph", "bad.dot"], "start_node"),
    ]
    for args, message in cases:
        result = invoke(args)
        assert result.exit_code == 2, args
        assert message in result.stderr and "Traceback" not in result.stderr


def test_graph_refuses_the_run_of_another_pipeline(workspace: Path) -> None:
    write(workspace / "a.dot", FAILING)
    write(workspace / "b.dot", FAILING.replace("echo fetched", "echo other"))
    ran = invoke(["run", "b.dot", "--logs-dir", "runs/{timestamp}", "--quiet"])
    assert ran.exit_code == 0, ran.stderr
    run_dir = only_run_dir(workspace / "runs")
    result = invoke(["graph", "a.dot", "--run", str(run_dir)])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert f"--run {run_dir}: that run is not of a.dot" in line
    assert f"attractor graph {run_dir / 'pipeline.dot'} --run {run_dir}" in line
    # The run's own pipeline, and its copy in the run directory, draw as before.
    for own in ("b.dot", str(run_dir / "pipeline.dot")):
        assert invoke(["graph", own, "--run", str(run_dir)]).exit_code == 0


def test_graph_checks_a_run_whose_manifest_has_no_digest(workspace: Path) -> None:
    write(workspace / "a.dot", FAILING)
    write(workspace / "b.dot", FAILING.replace("echo fetched", "echo other"))
    assert invoke(["run", "b.dot", "--logs-dir", "runs/{timestamp}", "--quiet"]).exit_code == 0
    run_dir = only_run_dir(workspace / "runs")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["source_sha256"]  # as an older attractor wrote it
    write(run_dir / "manifest.json", json.dumps(manifest))
    # The run directory's copy of its pipeline tells which pipeline it ran.
    assert invoke(["graph", "a.dot", "--run", str(run_dir)]).exit_code == 2
    assert invoke(["graph", "b.dot", "--run", str(run_dir)]).exit_code == 0
    # With neither, nothing tells: the run is drawn.
    (run_dir / "pipeline.dot").unlink()
    assert invoke(["graph", "a.dot", "--run", str(run_dir)]).exit_code == 0


def test_labels_written_as_graphviz_markup_are_drawn_as_text_never_as_links(
    workspace: Path,
) -> None:
    """A label that looks like a Graphviz HTML label (a step may write a sub-pipeline's
    file) would become a ``javascript:`` link in the SVG, and its IMG a file read."""
    markup = (
        "<<TABLE HREF='javascript:alert(1)'><TR><TD><IMG SRC='/etc/hostname'/></TD></TR></TABLE>>"
    )
    write(workspace / "child.dot", f"""digraph child {{
        start [shape=Mdiamond]; done [shape=Msquare]
        x [shape=parallelogram, tool_command="true", label="{markup}"]
        start -> x -> done
    }}""")  # fmt: skip
    write(workspace / "p.dot", f"""digraph p {{
        start [shape=Mdiamond]; done [shape=Msquare]
        sub [type=sub_pipeline, dot_file="child.dot", label="{markup}"]
        subgraph cluster_a {{ label="{markup}"; sub }}
        start -> sub [label="{markup}"]
        sub -> done
    }}""")  # fmt: skip
    result = invoke(["graph", "p.dot"])
    assert result.exit_code == 0, result.stderr
    tree = ET.fromstring(result.stdout)
    links = [e.tag for e in tree.iter() if any(k.endswith("href") or k == "src" for k in e.attrib)]
    assert links == [] and not list(tree.iter(f"{SVG}image"))
    texts = [t.text or "" for t in tree.iter(f"{SVG}text")]
    shown = [t for t in texts if "TABLE" in t]
    assert len(shown) == 4, texts  # the node's, the child's node's, the edge's, the box's
    assert all(t.startswith("<<TABLE HREF=") for t in shown)
