"""``attractor graph``'s pictures: clusters as boxes, a readable size, the current node."""

from __future__ import annotations

import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.cli.runkit import invoke, only_run_dir, write

SVG = "{http://www.w3.org/2000/svg}"
CLUSTERS = """digraph loops {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    subgraph cluster_build {
        label = "Build and test"
        compile [shape=parallelogram, tool_command="echo compiled"]
        subgraph cluster_checks {
            label = "Checks"
            test [shape=parallelogram, tool_command="echo tested"]
            lint [shape=parallelogram, tool_command="echo linted"]
        }
    }
    subgraph review_stage {
        label = "Review"
        review [shape=parallelogram, tool_command="exit 1"]
    }
    start -> compile -> test -> lint -> review -> done
}
"""
#: The README's example pipeline (330x590 pixels as a PNG before pictures grew).
README_EXAMPLE = """digraph feature {
    start     [shape=Mdiamond]
    exit      [shape=Msquare]
    plan      [prompt="Read the code and plan: $goal", max_turns=10]
    implement [prompt="Implement the plan. Run the tests.", max_turns=30]
    tests     [shape=parallelogram, tool_command="pytest -q", goal_gate=true,
               retry_target=implement]
    review    [shape=hexagon, label="Ship it?"]
    start -> plan -> implement -> tests
    tests  -> review    [condition="outcome=success"]
    tests  -> implement [condition="outcome=fail", label="Fix"]
    review -> exit      [label="[A] Approve"]
    review -> implement [label="[R] Rework"]
}
"""


def _groups(svg: str, cls: str) -> list[ET.Element]:
    return [
        g for g in ET.fromstring(svg).iter(f"{SVG}g") if cls in g.attrib.get("class", "").split()
    ]


def _title(group: ET.Element) -> str:
    return "".join(t.text or "" for t in group.iter(f"{SVG}text"))


def _box(group: ET.Element) -> tuple[float, float, float, float]:
    shape = next(e for e in group.iter() if e.tag in (f"{SVG}polygon", f"{SVG}path"))
    raw = shape.attrib.get("points") or shape.attrib["d"]
    numbers = [float(n) for n in raw.replace("M", " ").replace("C", " ").replace(",", " ").split()]
    xs, ys = numbers[0::2], numbers[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _inside(inner: tuple[float, ...], outer: tuple[float, ...]) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[2] <= outer[2]
        and (inner[3] <= outer[3])
    )


Boxes = dict[str, tuple[float, float, float, float]]


def _drawn_silently(workspace: Path) -> tuple[Boxes, Boxes]:
    """The boxes of the clusters (by title) and of the nodes (by id) of ``attractor graph
    p.dot`` run in a new process, which must succeed and say nothing on stderr but what
    a machine's font set-up may say."""
    result = subprocess.run(
        [sys.executable, "-m", "attractor", "graph", "p.dot"],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    said = [line for line in result.stderr.splitlines() if not line.startswith("Fontconfig")]
    assert result.returncode == 0 and said == [], result.stderr
    clusters = {_title(g): _box(g) for g in _groups(result.stdout, "cluster")}
    nodes = {g.attrib["id"].removeprefix("node-"): _box(g) for g in _groups(result.stdout, "node")}
    return clusters, nodes


def test_clusters_and_labelled_subgraphs_are_drawn_as_boxes_around_their_nodes(
    workspace: Path,
) -> None:
    write(workspace / "p.dot", CLUSTERS)
    result = invoke(["graph", "p.dot"])
    assert result.exit_code == 0, result.stderr
    clusters = {_title(g): _box(g) for g in _groups(result.stdout, "cluster")}
    assert set(clusters) == {"Build and test", "Checks", "Review"}
    nodes = {g.attrib["id"].removeprefix("node-"): _box(g) for g in _groups(result.stdout, "node")}
    assert _inside(nodes["compile"], clusters["Build and test"])
    assert _inside(nodes["test"], clusters["Checks"])
    assert _inside(clusters["Checks"], clusters["Build and test"])
    assert _inside(nodes["review"], clusters["Review"])
    assert not _inside(nodes["review"], clusters["Build and test"])
    assert not _inside(nodes["start"], clusters["Build and test"])


def test_a_png_is_large_enough_to_read(workspace: Path) -> None:
    write(workspace / "p.dot", README_EXAMPLE)
    assert invoke(["graph", "p.dot", "-o", "p.png"]).exit_code == 0
    width, height = struct.unpack(">II", (workspace / "p.png").read_bytes()[16:24])
    assert width >= 500 and height >= 900, (width, height)


def test_the_run_picture_marks_the_current_node_and_fades_the_edges_not_taken(
    workspace: Path,
) -> None:
    write(workspace / "p.dot", CLUSTERS)
    ran = invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}", "--quiet"])
    assert ran.exit_code == 1, ran.stderr  # review fails
    result = invoke(["graph", "p.dot", "--run", str(only_run_dir(workspace / "runs"))])
    assert result.exit_code == 0, result.stderr
    current = _groups(result.stdout, "current")
    assert [g.attrib["id"] for g in current] == ["node-review"]
    outline = next(e for e in current[0].iter() if e.tag == f"{SVG}polygon")
    assert outline.attrib["stroke"] == "#dc2626" and float(outline.attrib["stroke-width"]) >= 3
    edges = {g.attrib["id"]: g for g in _groups(result.stdout, "edge")}
    faded = next(e for e in edges["edge-review-done"].iter() if e.tag == f"{SVG}path")
    taken = next(e for e in edges["edge-lint-review"].iter() if e.tag == f"{SVG}path")
    assert faded.attrib["stroke"] == "#a1a1aa"
    assert taken.attrib["stroke"] == "#1d4ed8"


def test_a_bare_graphviz_keyword_as_a_value_still_draws_the_clusters(workspace: Path) -> None:
    # type=subgraph is ours, and a syntax error for Graphviz unless quoted: the
    # picture's clusters come from the text, so the keyword is quoted on the way.
    write(
        workspace / "child.dot",
        "digraph c { start [shape=Mdiamond]; e [shape=Msquare]; start -> e }",
    )
    write(
        workspace / "p.dot",
        "digraph p {\n    start [shape=Mdiamond]\n    done [shape=Msquare]\n"
        '    subgraph cluster_inner {\n        label = "Inner"\n'
        '        run_child [type=subgraph, dot_file="child.dot"]\n    }\n'
        "    start -> run_child -> done\n}\n",
    )
    clusters, nodes = _drawn_silently(workspace)
    assert "Inner" in clusters
    assert _inside(nodes["run_child"], clusters["Inner"])


def test_dotted_attribute_names_still_draw_the_clusters_and_say_nothing(workspace: Path) -> None:
    # human.default_choice is ours, and a syntax error for Graphviz unless quoted.
    write(
        workspace / "p.dot",
        "digraph p {\n    start [shape=Mdiamond]\n    done [shape=Msquare]\n"
        '    subgraph cluster_gate {\n        label = "Sign-off"\n'
        '        gate [shape=hexagon, human.default_choice="ok", human.timeout="1h"]\n'
        "    }\n"
        '    start -> gate\n    gate -> done [label="[O] ok"]\n}\n',
    )
    clusters, nodes = _drawn_silently(workspace)
    assert _inside(nodes["gate"], clusters["Sign-off"])
