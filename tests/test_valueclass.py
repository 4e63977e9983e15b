"""``@frozen`` classes behave as ``@dataclass(frozen=True)`` ones do, with shared methods."""

from __future__ import annotations

import dataclasses
from dataclasses import field

import pytest

from attractor import valueclass
from attractor.valueclass import frozen


@frozen
class Point:
    x: int
    y: int = 0
    note: str = field(default="", compare=False, repr=False)


@frozen(kw_only=True)
class Labelled(Point):
    label: str


@dataclasses.dataclass(frozen=True)
class Reference:
    x: int
    y: int = 0
    note: str = field(default="", compare=False, repr=False)


@frozen
class Shouting:
    word: str

    def __repr__(self) -> str:
        return self.word.upper()


def test_equality_hash_and_text_match_a_generated_frozen_dataclass() -> None:
    ours, theirs = Point(1, 2, note="a"), Reference(1, 2, note="a")
    assert repr(ours) == repr(theirs).replace("Reference", "Point") == "Point(x=1, y=2)"
    assert ours == Point(1, 2, note="b")  # a field left out of comparison
    assert ours != Point(1, 3)
    assert hash(ours) == hash(Point(1, 2, note="b")) == hash(theirs)
    assert len({ours, Point(1, 2), Point(2, 1)}) == 2
    assert ours != Labelled(x=1, y=2, label="p")  # another class is never equal
    assert ours.__eq__(theirs) is NotImplemented


def test_a_subclass_compares_and_shows_its_own_fields() -> None:
    a, b = Labelled(x=1, label="p"), Labelled(x=1, label="q")
    assert a != b and a == Labelled(x=1, label="p")
    assert repr(a) == "Labelled(x=1, y=0, label='p')"
    with pytest.raises(TypeError):
        Labelled(1, 0, "", "p")  # type: ignore[call-arg]  # keyword-only


def test_instances_are_read_only_and_stay_dataclasses() -> None:
    point = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    moved = dataclasses.replace(point, x=5)
    assert moved == Point(5) and point == Point(1)
    assert [f.name for f in dataclasses.fields(Labelled)] == ["x", "y", "note", "label"]
    assert dataclasses.asdict(moved) == {"x": 5, "y": 0, "note": ""}


def test_a_method_the_class_writes_is_kept() -> None:
    assert repr(Shouting("hi")) == "HI"
    assert Shouting("hi") == Shouting("hi")


# -- the class made without dataclasses (Python 3.11) ---------------------------------

#: Prints, as JSON, what was made of every dataclass of the package (argv[1] "fast":
#: @frozen and @mutable make their classes; "plain": dataclasses makes them).
DESCRIBE = r"""
import importlib, inspect, json, pkgutil, re, sys
import attractor.valueclass as valueclass
valueclass._FAST = sys.argv[1] == "fast"
import attractor

ours = set()
made_here = valueclass._fast

def _fast(cls, *args, **kwargs):
    made = made_here(cls, *args, **kwargs)
    if made is not None:
        ours.add(f"{made.__module__}.{made.__qualname__}")
    return made

valueclass._fast = _fast

def norm(value):
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))

def describe(cls):
    init = cls.__init__
    code = init.__code__
    fields = {
        name: [norm(getattr(f, a)) for a in (
            "name", "type", "default", "default_factory", "init", "repr", "hash", "compare",
            "metadata", "kw_only", "_field_type")]
        for name, f in cls.__dataclass_fields__.items()
    }
    return {
        "fields": fields,
        "params": norm(cls.__dataclass_params__),
        "signature": norm(str(inspect.signature(init))),
        "annotations": norm(init.__annotations__),
        "qualname": init.__qualname__,
        "code": [code.co_code.hex(), norm(code.co_consts), code.co_names, code.co_varnames,
                 code.co_freevars, code.co_argcount, code.co_kwonlyargcount],
        "cells": [norm(cell.cell_contents) for cell in init.__closure__ or ()],
        "defaults": norm(init.__defaults__), "kwdefaults": norm(init.__kwdefaults__),
        "match_args": norm(cls.__dict__.get("__match_args__")),
        "doc": cls.__doc__,
        "attributes": {name: norm(cls.__dict__.get(name, "-")) for name in fields},
        "abstract": sorted(getattr(cls, "__abstractmethods__", ())),
        "guard": cls.__setattr__.__qualname__,
        "hash": norm(cls.__dict__.get("__hash__", "-")).split(".")[-1],
    }

found = {}
for info in pkgutil.walk_packages(attractor.__path__, "attractor."):
    try:
        module = importlib.import_module(info.name)
    except ImportError:  # an optional dependency this machine lacks
        continue
    for value in vars(module).values():
        if (isinstance(value, type) and value.__module__ == info.name
                and "__dataclass_fields__" in value.__dict__):
            name = f"{value.__module__}.{value.__qualname__}"
            found[name] = {**describe(value), "ours": name in ours}
print(json.dumps(found))
"""


def _describe(way: str) -> dict[str, dict[str, object]]:
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", DESCRIBE, way], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, dict[str, object]] = json.loads(done.stdout)
    return found


@pytest.mark.skipif(not valueclass._FAST, reason="the path of Python 3.11 only")
def test_every_dataclass_of_the_package_is_what_dataclasses_would_make() -> None:
    fast, plain = _describe("fast"), _describe("plain")
    assert fast.keys() == plain.keys()
    ours = [name for name, made in fast.items() if made.pop("ours")]
    for made in plain.values():
        assert not made.pop("ours")
    assert len(ours) > 100  # nearly every frozen class, not a handful
    for name in fast:
        assert fast[name] == plain[name], name


def test_what_only_dataclasses_does_is_left_to_it() -> None:
    @frozen
    class Scaled:
        base: int
        factor: dataclasses.InitVar[int] = 2
        value: int = field(init=False, default=0)

        def __post_init__(self, factor: int) -> None:
            object.__setattr__(self, "value", self.base * factor)

    @frozen
    class Marked:
        a: int
        _: dataclasses.KW_ONLY
        b: int = 1

    assert Scaled(3).value == 6 and Scaled(3, 5).value == 15
    assert Marked(1, b=2).b == 2
    with pytest.raises(TypeError):
        Marked(1, 2)  # type: ignore[call-arg]  # b is keyword-only
    with pytest.raises(ValueError, match="mutable default"):

        @frozen
        class Mutable:
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @frozen
        class Misordered:
            a: int = 0
            b: int  # type: ignore[misc]


def test_defaults_factories_and_post_init_behave_as_in_dataclasses() -> None:
    made: list[str] = []

    @frozen
    class Job:
        name: str
        tags: tuple[str, ...] = ()
        seen: list[str] = field(default_factory=list)
        stamp: list[str] = field(init=False, default_factory=lambda: ["new"])

        def __post_init__(self) -> None:
            made.append(self.name)

    one, two = Job("a"), Job("b", ("x",), ["s"])
    assert (one.tags, one.seen, one.stamp) == ((), [], ["new"])
    assert one.seen is not Job("c").seen  # a new list each time
    assert (two.tags, two.seen) == (("x",), ["s"])
    assert made == ["a", "b", "c"]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'name'"):
        one.name = "z"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'tags'"):
        del one.tags
    assert Job.__match_args__ == ("name", "tags", "seen")
    assert "stamp" not in Job.__dict__ and Job.tags == ()


def test_a_mutable_class_behaves_as_a_plain_dataclass() -> None:
    from attractor.valueclass import mutable

    @mutable
    class Counter:
        name: str
        seen: list[str] = field(default_factory=list)
        total: int = field(default=0, compare=False)

    @dataclasses.dataclass
    class Plain:
        name: str
        seen: list[str] = field(default_factory=list)
        total: int = field(default=0, compare=False)

    @mutable
    class Keyed:
        key: str

        def __hash__(self) -> int:
            return hash(self.key)

    one = Counter("a")
    one.total += 2
    one.seen.append("x")
    assert repr(one) == repr(Plain("a", ["x"], 2)).replace("Plain", "Counter")
    assert one == Counter("a", ["x"], 5) and one != Counter("b", ["x"])  # total not compared
    assert Counter("a").seen is not Counter("a").seen
    with pytest.raises(TypeError):
        hash(one)  # as a dataclass with __eq__: unhashable
    assert Counter.__hash__ is None is Plain.__hash__
    assert hash(Keyed("k")) == hash("k")  # a hash the class wrote is kept
    assert dataclasses.replace(one, name="b") == Counter("b", ["x"])
    assert [f.name for f in dataclasses.fields(Counter)] == ["name", "seen", "total"]
