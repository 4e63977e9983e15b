"""A sub-pipeline's event passed on inside a ``child_event`` is redacted like any other."""

from __future__ import annotations

from attractor import redact
from attractor.engine.eventbus import redacted
from attractor.events import ChildEvent, StageOutput
from attractor.redact import Redactor

SECRET = "deploy-7f3a9c1e5b2d"


def test_the_childs_event_inside_stays_an_event_without_the_secret() -> None:
    inner = StageOutput(node="b", visit=1, stream="stdout", text=f"key {SECRET}\n", offset=0)
    wrapped = ChildEvent(node="checks", child_dir="checks/child", event=inner)
    token = redact.CURRENT.set(Redactor({SECRET: "DEPLOY_TOKEN"}))
    try:
        clean = redacted(wrapped)
    finally:
        redact.CURRENT.reset(token)
    assert isinstance(clean, ChildEvent)
    assert isinstance(clean.event, StageOutput)
    assert clean.event.text == "key [redacted:DEPLOY_TOKEN]\n"
    assert SECRET not in str(clean.to_json())
    shown = clean.as_parent()
    assert isinstance(shown, StageOutput) and shown.node == "checks/b"
