"""The dataclass method cache: kept between processes, the same classes either way."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path

import pytest

# A fresh process: declares classes of every kind ``dataclasses`` writes code for,
# uses them, and prints what it saw and how many method texts it compiled.
SCRIPT = """
import dataclasses, json, sys
from attractor import methodcache
from attractor.valueclass import frozen

@frozen(kw_only=True)
class Event:
    kind: str
    tags: tuple[str, ...] = ()
    extra: dict = dataclasses.field(default_factory=dict)

@dataclasses.dataclass
class Plain:
    n: int
    items: list = dataclasses.field(default_factory=list)

for i in range(*map(int, sys.argv[1:3])):  # throwaway classes, all different
    dataclasses.make_dataclass(f"Extra{i}", [(f"field_{i}", int)])

event = Event(kind="a")
plain = Plain(1)
plain.items.append(2)
try:
    event.kind = "b"
    frozen_ok = False
except dataclasses.FrozenInstanceError:
    frozen_ok = True
try:
    Event("a")
    kw_ok = False
except TypeError:
    kw_ok = True
print(json.dumps({
    "repr": repr(event), "plain": repr(plain), "frozen": frozen_ok, "kw_only": kw_ok,
    "fresh_dict": Event(kind="x").extra is not event.extra,
    "annotations": Event.__init__.__annotations__.get("kind") is str,
    "compiled": methodcache.compiled(), "cache": methodcache.cache_path(),
}))
"""


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bytecode folder of the module's own: the standard library's is compiled once."""
    return tmp_path_factory.mktemp("pyc")


@pytest.fixture
def pyc(prefix: Path) -> Path:
    """The module's bytecode folder, with no method cache in it yet."""
    for cache in prefix.rglob("dataclass-methods.*"):
        cache.unlink()
    return prefix


def run(
    prefix: Path, *flags: str, env: dict[str, str] | None = None, extra: range = range(0)
) -> dict[str, object]:
    """Run SCRIPT (with throwaway classes numbered ``extra``), its bytecode under ``prefix``."""
    numbers = [str(extra.start), str(extra.stop)]
    command = [sys.executable, *flags, "-X", f"pycache_prefix={prefix}", "-c", SCRIPT, *numbers]
    environment = {"PATH": "/usr/bin:/bin", **(env or {})}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


EXPECTED = {
    "repr": "Event(kind='a', tags=(), extra={})",
    "plain": "Plain(n=1, items=[2])",
    "frozen": True,
    "kw_only": True,
    "fresh_dict": True,
    "annotations": True,
}


def test_a_second_process_compiles_nothing_and_gets_the_same_classes(pyc: Path) -> None:
    first = run(pyc)
    assert {k: first[k] for k in EXPECTED} == EXPECTED
    assert first["compiled"] > 0  # type: ignore[operator]
    cache = Path(str(first["cache"]))
    assert cache.is_file() and cache.is_relative_to(pyc)
    second = run(pyc)
    assert {k: second[k] for k in EXPECTED} == EXPECTED
    assert second["compiled"] == 0


def test_without_bytecode_writing_the_cache_is_read_but_never_written(pyc: Path) -> None:
    first = run(pyc, "-B")
    assert first["compiled"] > 0  # type: ignore[operator]
    assert not Path(str(first["cache"])).exists()
    run(pyc)  # writes it
    again = run(pyc, env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert again["compiled"] == 0
    assert {k: again[k] for k in EXPECTED} == EXPECTED


@pytest.mark.parametrize(
    "content",
    [b"not marshal at all", b"", "marshal of another interpreter's magic"],
    ids=["garbage", "empty", "other-magic"],
)
def test_a_damaged_or_foreign_cache_is_ignored_and_replaced(
    pyc: Path, content: bytes | str
) -> None:
    cache = Path(str(run(pyc)["cache"]))
    if isinstance(content, str):
        _, table = marshal.loads(cache.read_bytes())
        content = marshal.dumps((b"\x00\x00\r\n", table))
    cache.write_bytes(content)
    damaged = run(pyc)
    assert {k: damaged[k] for k in EXPECTED} == EXPECTED
    assert damaged["compiled"] > 0  # type: ignore[operator]
    assert run(pyc)["compiled"] == 0  # the bad file was replaced by a good one


def test_an_entry_that_cannot_be_read_is_compiled_again_and_replaced(pyc: Path) -> None:
    cache = Path(str(run(pyc)["cache"]))
    stamp, table = marshal.loads(cache.read_bytes())
    cache.write_bytes(marshal.dumps((stamp, dict.fromkeys(table, b"not code"))))
    damaged = run(pyc)
    assert {k: damaged[k] for k in EXPECTED} == EXPECTED
    assert damaged["compiled"] == len(table)
    assert run(pyc)["compiled"] == 0


def test_an_unwritable_cache_folder_costs_only_the_compiling(tmp_path: Path) -> None:
    blocked = tmp_path / "pyc"
    blocked.write_text("a file where the cache folder would go")
    for _ in range(2):
        result = run(blocked)
        assert {k: result[k] for k in EXPECTED} == EXPECTED
        assert result["compiled"] > 0  # type: ignore[operator]


def test_past_its_limit_the_cache_keeps_only_what_the_last_writer_used(pyc: Path) -> None:
    from attractor.methodcache import LIMIT

    def saved() -> int:
        _, table = marshal.loads(Path(str(first["cache"])).read_bytes())
        return len(table)

    first = run(pyc, extra=range(LIMIT + 50))  # more texts than the limit, all used here
    assert saved() > LIMIT
    assert run(pyc)["compiled"] == 0  # read whole, nothing new: not written again
    assert saved() > LIMIT
    new = range(LIMIT + 50, LIMIT + 51)
    assert run(pyc, extra=new)["compiled"] > 0  # one new class: written, trimmed to its use
    assert saved() < 20
    assert run(pyc, extra=new)["compiled"] == 0
