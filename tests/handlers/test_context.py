"""The run context: a parallel branch's clone shares nothing it could change."""

from __future__ import annotations

from attractor.handlers.context import Context


def test_a_clone_is_isolated_all_the_way_down() -> None:
    nested = {"files": ["a.py", {"b": [1, 2.5, True, None]}], "note": "x"}
    odd = {(1, 2): {3}}  # not a JSON shape: copied by copy.deepcopy
    context = Context({"plan": nested, "odd": odd, "n": 3})
    context.append_log("started")
    twin = context.clone()
    twin.get("plan")["files"][1]["b"].append("branch")
    twin.get("plan")["files"].append("c.py")
    twin.get("odd")[(1, 2)].add(4)
    twin.set("n", 4)
    twin.append_log("branch")
    assert context.get("plan") == {"files": ["a.py", {"b": [1, 2.5, True, None]}], "note": "x"}
    assert context.get("odd") == {(1, 2): {3}}
    assert context.get("n") == 3
    assert context.logs == ["started"]
    assert twin.get("plan")["files"] == ["a.py", {"b": [1, 2.5, True, None, "branch"]}, "c.py"]
    assert context.snapshot() == {"plan": nested, "odd": odd, "n": 3}
    assert context.snapshot()["plan"] is not nested
