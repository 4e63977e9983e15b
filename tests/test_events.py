"""Events compare, hash, print and refuse changes as value objects do."""

from __future__ import annotations

import dataclasses

import pytest

from attractor.events import ChildEvent, StageCompleted, StageStarted


def test_events_of_equal_fields_are_equal_and_hash_alike() -> None:
    a = StageStarted(ts=1.0, name="plan", index=1)
    b = StageStarted(ts=1.0, name="plan", index=1)
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != StageStarted(ts=1.0, name="plan", index=2)
    assert a != StageCompleted(ts=1.0, name="plan", index=1, duration=0.0)


def test_an_event_prints_its_class_and_fields() -> None:
    text = repr(StageStarted(ts=1.0, name="plan", index=1))
    assert text.startswith("StageStarted(ts=1.0, name='plan', index=1")


def test_an_event_cannot_be_changed() -> None:
    event = StageStarted(ts=1.0, name="plan", index=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.name = "other"  # type: ignore[misc]
    renamed = ChildEvent(ts=2.0, node="sub", child_dir="sub", event=event).as_parent()
    assert renamed == StageStarted(ts=1.0, name="sub/plan", index=1)
