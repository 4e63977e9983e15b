"""``@frozen`` classes behave as ``@dataclass(frozen=True)`` ones do, with shared methods."""

from __future__ import annotations

import dataclasses
from dataclasses import field

import pytest

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
