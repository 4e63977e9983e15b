"""A seeded mutation fuzzer for pipeline DOT files, shared by the tests and the benchmark.

Each case starts from one of the pipelines in ``examples/*.dot`` and
``examples/invalid/*.dot`` and applies one to four byte-level mutations: delete,
duplicate or swap ranges, insert DOT fragments and bad attributes, unicode, NUL
and invalid UTF-8, long identifiers, brace or subgraph nesting thousands deep,
unterminated strings and comments, CRLF, a BOM, truncation.

A case depends only on ``(seed, index)``, so any failure is reproduced by
``Mutator(load_corpus(), seed).case(index)`` without replaying earlier cases.
:func:`check_case` then asserts the library's contract: ``prepare`` returns a
graph (or None) and diagnostics whose lines lie inside the file, or raises an
``AttractorError``; anything else (RecursionError included) or a run over the
time budget is a crash.

This complements ``test_fuzz.py`` (hypothesis: arbitrary text and token soup
given to the parser) with whole realistic files mutated at the byte level and
read from disk, as the CLI reads them.
"""

from __future__ import annotations

import random
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from attractor.dot.graph import Graph
from attractor.errors import AttractorError, Diagnostic
from attractor.linter.prepare import prepare

ROOT = Path(__file__).resolve().parents[2]

#: Whitespace as the DOT lexer skips it.
DOT_SPACE = " \t\r\n\f\v"

FRAGMENTS = (
    "->",
    "[",
    "]",
    "{",
    "}",
    '"',
    "=",
    ";",
    ",",
    "--",
    "<",
    "subgraph",
    "subgraph cluster_x { a }",
    "node [shape=box]",
    "edge [weight=2]",
    "graph [",
    "digraph",
    "strict",
    "a -> b -> c",
    "start -> exit",
    "x [",
    "-> ->",
    "\\",
    "//",
    "/*",
    "*/",
    "/* c */",
    "// line\n",
    "\n# line\n",
    "#",
    '"key"=',
    '"\\"',
    '"a\\nb"',
    "\n",
    "\r",
    "\t",
)

#: ``key=value`` items; inserted into attribute lists or as ``graph [...]``.
ATTRIBUTES = (
    'condition="outcome="',
    'condition="outcome=sucess"',
    'condition="&&"',
    'condition="outcome!=success && "',
    'condition="a.b.=c"',
    "condition=outcome",
    "max_turns=-1",
    "max_turns=lots",
    "max_turns=99999999999999999999999",
    'timeout="5xx"',
    'timeout=""',
    "timeout=-5s",
    "timeout=1e309s",
    'model_stylesheet="* { llm_model: }"',
    'model_stylesheet="{"',
    'model_stylesheet="#x { llm_model: a; ; }"',
    'model_stylesheet=".c { reasoning_effort: ultra }"',
    'model_stylesheet="* { llm_model: a } * {"',
    "shape=Mdiamond",
    "shape=Msquare",
    "shape=parallelogram",
    "shape=hexagon",
    "shape=component",
    'type="tool"',
    'tool_command=""',
    "goal_gate=maybe",
    "retry_target=nowhere",
    "fallback_retry_target=start",
    "weight=1e999",
    "weight=-0",
    "fidelity=xx",
    "default_fidelity=full",
    'llm_provider=""',
    "reasoning_effort=ultra",
    'label="$goal"',
    'prompt="$goal $goal $nothing"',
    "max_retries=99999999999999999999",
    "default_max_retry=-5",
    "default_max_turns=0",
    "allow_partial=yes",
    'class="a,,b"',
    'class=""',
    "max_visits=0",
    "sprint_limit=-3",
    "on_turn_limit=explode",
    "join_policy=quorum",
    "loop_restart=true",
    'goal="\u00e9\u00e8 \U0001f680"',
    "rankdir=LR",
    "unknown_attr=1",
    "timout=5s",
)

UNICODE = (
    "\u00e9",
    "\u00df",
    "\u0130",
    "\u2028",
    "\u2029",
    "\u0085",
    "\u00a0",
    "\u200b",
    "\ufeff",
    "\ufffd",
    "\u202e",
    "\U0001f680",
    "\u4e2d\u6587",
    "\u0410",
    "\u0301",
    "\uffff",
)

#: Byte strings that are not UTF-8 (or are, but surprise a reader).
RAW_BYTES = (b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80\x80", b"\x1b")


@dataclass(frozen=True)
class Seed:
    """One starting pipeline: its path relative to the repository and its bytes."""

    name: str
    data: bytes


def load_corpus(root: Path = ROOT) -> list[Seed]:
    """The example pipelines, valid then invalid, sorted by name (a stable order)."""
    paths = sorted((root / "examples").glob("*.dot")) + sorted(
        (root / "examples" / "invalid").glob("*.dot")
    )
    if not paths:
        raise FileNotFoundError(f"no example pipelines under {root / 'examples'}")
    return [Seed(str(p.relative_to(root)), p.read_bytes()) for p in paths]


# -- mutations -------------------------------------------------------------------------------------

Mutation = Callable[[random.Random, bytes], bytes]

_STRUCTURE = re.compile(rb"[{}\[\];,\n]")
_OPEN_LIST = re.compile(rb"\[")


def _span(rng: random.Random, data: bytes, longest: int = 64) -> tuple[int, int]:
    start = rng.randint(0, len(data))
    return start, min(len(data), start + rng.randint(1, longest))


def _insert(rng: random.Random, data: bytes, piece: bytes) -> bytes:
    at = _near_token(rng, data)
    return data[:at] + piece + data[at:]


def _near_token(rng: random.Random, data: bytes) -> int:
    """A random offset, half the time just after a structural character."""
    at = _after(rng, data, _STRUCTURE) if rng.random() < 0.5 else None
    return rng.randint(0, len(data)) if at is None else at


def _after(rng: random.Random, data: bytes, pattern: re.Pattern[bytes]) -> int | None:
    """The end of the first match of ``pattern`` after a random offset (wrapping round)."""
    match = pattern.search(data, rng.randint(0, len(data))) or pattern.search(data)
    return match.end() if match else None


def delete_range(rng: random.Random, data: bytes) -> bytes:
    start, end = _span(rng, data)
    return data[:start] + data[end:]


def duplicate_range(rng: random.Random, data: bytes) -> bytes:
    start, end = _span(rng, data, 200)
    return data[:end] + data[start:end] * rng.randint(1, 4) + data[end:]


def swap_ranges(rng: random.Random, data: bytes) -> bytes:
    if len(data) < 4:
        return data[::-1]
    a, b, c, d = sorted(rng.sample(range(len(data) + 1), 4))
    return data[:a] + data[c:d] + data[b:c] + data[a:b] + data[d:]


def insert_fragment(rng: random.Random, data: bytes) -> bytes:
    return _insert(rng, data, rng.choice(FRAGMENTS).encode())


def insert_attribute(rng: random.Random, data: bytes) -> bytes:
    """A bad (or merely odd) attribute into an existing list, or as a ``graph [...]``."""
    item = rng.choice(ATTRIBUTES).encode()
    at = _after(rng, data, _OPEN_LIST) if rng.random() < 0.7 else None
    if at is not None:
        return data[:at] + item + b", " + data[at:]
    body = data.find(b"{") + 1
    return data[:body] + b"\n  graph [" + item + b"]\n" + data[body:]


def insert_unicode(rng: random.Random, data: bytes) -> bytes:
    text = "".join(rng.choice(UNICODE) for _ in range(rng.randint(1, 6)))
    return _insert(rng, data, text.encode())


def insert_raw_bytes(rng: random.Random, data: bytes) -> bytes:
    return _insert(rng, data, rng.choice(RAW_BYTES) * rng.randint(1, 3))


def long_identifier(rng: random.Random, data: bytes) -> bytes:
    name = b"n" + b"_x9" * rng.randint(300, 30_000)
    piece = rng.choice((name, name + b" -> exit", b"a -> " + name, b'label="' + name + b'"'))
    return _insert(rng, data, b"\n" + piece + b"\n")


def deep_braces(rng: random.Random, data: bytes) -> bytes:
    depth = rng.randint(200, 5_000)
    closed = rng.random() < 0.7
    return _insert(rng, data, b"{" * depth + b"}" * (depth if closed else rng.randint(0, depth)))


def deep_subgraphs(rng: random.Random, data: bytes) -> bytes:
    depth = rng.randint(200, 4_000)
    opener = rng.choice(
        (b"subgraph { ", b"subgraph s { a ", b"subgraph cluster_x { node [shape=box] ")
    )
    return _insert(rng, data, opener * depth + b"}" * (depth - rng.randint(0, 2)))


def deep_brackets(rng: random.Random, data: bytes) -> bytes:
    depth = rng.randint(200, 5_000)
    return _insert(rng, data, b"a " + b"[" * depth + b"]" * depth)


def long_chain(rng: random.Random, data: bytes) -> bytes:
    """A long edge chain (thousands of nodes) tied into the graph's start and exit."""
    length = rng.randint(200, 3_000)
    chain = " -> ".join(f"c{i}" for i in range(length)).encode()
    return _insert(rng, data, b"\nstart -> " + chain + b" -> exit\nc0 -> c1\n")


def unterminated_string(rng: random.Random, data: bytes) -> bytes:
    return _insert(rng, data, b'"' + b"unterminated \\" * rng.randint(0, 2))


def unterminated_comment(rng: random.Random, data: bytes) -> bytes:
    return _insert(rng, data, rng.choice((b"/*", b"/* never closed *", b"/*/")))


def crlf(rng: random.Random, data: bytes) -> bytes:
    return data.replace(b"\n", rng.choice((b"\r\n", b"\r", b"\n\r")))


def bom(rng: random.Random, data: bytes) -> bytes:
    return rng.choice((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) + data


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randint(0, len(data))]


def trailing_blank(rng: random.Random, data: bytes) -> bytes:
    """Blank lines or a comment after the last token, as editors leave them."""
    tail = rng.choice((b"\n" * rng.randint(1, 40), b"  \t\n" * rng.randint(1, 8), b"// end\n"))
    return data + tail


MUTATIONS: dict[str, Mutation] = {
    f.__name__: f
    for f in (
        delete_range,
        duplicate_range,
        swap_ranges,
        insert_fragment,
        insert_attribute,
        insert_unicode,
        insert_raw_bytes,
        long_identifier,
        deep_braces,
        deep_subgraphs,
        deep_brackets,
        long_chain,
        unterminated_string,
        unterminated_comment,
        crlf,
        bom,
        truncate,
        trailing_blank,
    )
}

#: Cheap mutations are picked more often than the ones that build huge inputs.
_WEIGHTS = {
    "delete_range": 6,
    "duplicate_range": 4,
    "swap_ranges": 4,
    "insert_fragment": 8,
    "insert_attribute": 12,
    "truncate": 3,
}

#: How many mutations a case stacks: mostly few, so many cases still parse and reach lint.
_OP_COUNTS = (1, 1, 1, 2, 2, 3, 4)


@dataclass(frozen=True)
class Case:
    """One mutated input and how it was made."""

    seed: int
    index: int
    base: str
    ops: tuple[str, ...]
    data: bytes
    first: str | None = None

    def reproducer(self, limit: int = 3_000) -> str:
        """Seed, index, mutations and the input (head and tail when it is long)."""
        shown = repr(self.data)
        if len(shown) > limit:
            shown = f"{shown[: limit // 2]} ...<{len(self.data)} bytes>... {shown[-limit // 2 :]}"
        first = f', first="{self.first}"' if self.first else ""
        make = f"Mutator(load_corpus(), {self.seed}).case({self.index}{first}).data"
        return (
            f"seed={self.seed} index={self.index} base={self.base} ops={list(self.ops)}\n"
            f"reproduce (repo root): python -c 'import sys; from tests.dot.fuzzkit import *; "
            f"sys.stdout.buffer.write({make})' > case.dot\ninput: {shown}"
        )


class Mutator:
    """Makes case ``index`` of run ``seed`` from the corpus, deterministically."""

    def __init__(self, corpus: Sequence[Seed], seed: int) -> None:
        self.corpus = list(corpus)
        self.seed = seed
        self.names = sorted(MUTATIONS)
        self.weights = [_WEIGHTS.get(name, 1) for name in self.names]

    def case(self, index: int, first: str | None = None) -> Case:
        """Case ``index``; ``first`` forces the first mutation (to cover each kind)."""
        rng = random.Random(f"{self.seed}:{index}:{first}")
        base = rng.choice(self.corpus)
        ops = [first] if first else []
        ops += rng.choices(self.names, self.weights, k=rng.choice(_OP_COUNTS) - len(ops))
        data = base.data
        for name in ops:
            data = MUTATIONS[name](rng, data)
        return Case(self.seed, index, base.name, tuple(ops), data, first)

    def cases(self, count: int, start: int = 0) -> Iterator[Case]:
        for index in range(start, start + count):
            yield self.case(index)

    def sample(self, count: int) -> list[Case]:
        """``count`` cases whose first mutations cycle through every kind."""
        return [self.case(i, first=self.names[i % len(self.names)]) for i in range(count)]


# -- running a case --------------------------------------------------------------------------------

Status = Literal["parsed", "syntax", "unreadable", "crash"]


class TimeLimitExceeded(Exception):
    """A case ran past its time budget (raised from SIGALRM)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeLimitExceeded in the main thread after ``seconds``.

    Saves and restores any outer SIGALRM timer (pytest-timeout's signal
    method uses one), so the outer limit keeps counting. The regex engine
    checks for signals, so this also interrupts a runaway match. Off the main
    thread (where signals cannot be handled) there is no limit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeLimitExceeded(f"over the {seconds:g}s budget")

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            left = outer - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))


@dataclass
class Result:
    """What one case did: its status, diagnostics, time and, for a crash, why."""

    status: Status
    seconds: float
    diagnostics: list[Diagnostic] = field(default_factory=list)
    problem: str = ""

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


def read_text(data: bytes) -> str:
    """``data`` as ``read_source`` sees it: UTF-8 with universal newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def line_problems(diagnostics: Sequence[Diagnostic], text: str) -> list[str]:
    """Diagnostics whose line or column cannot be in ``text``.

    A line may be one past the last (an error at end of file after a final newline).
    """
    last = text.count("\n") + 1
    return [
        f"{d.rule} at line {d.line}, column {d.column} (file has {last} lines): {d.message}"
        for d in diagnostics
        if not (1 <= d.line <= last + 1 and d.column >= 1)
    ]


def check_case(case: Case, path: Path, budget: float = 5.0) -> Result:
    """Write the case to ``path``, run ``prepare`` on it and judge the outcome."""
    path.write_bytes(case.data)
    started = time.perf_counter()
    try:
        with time_limit(budget):
            graph, diagnostics = prepare(path, file=str(path))
    except AttractorError:
        return Result("unreadable", time.perf_counter() - started)
    except Exception as error:
        kind = "hang" if isinstance(error, TimeLimitExceeded) else "exception"
        problem = f"{kind}: " + "".join(traceback.format_exception(error, limit=-8))
        return Result("crash", time.perf_counter() - started, problem=problem)
    seconds = time.perf_counter() - started
    return _judge(graph, diagnostics, case, seconds)


def _judge(graph: object, diagnostics: object, case: Case, seconds: float) -> Result:
    if not isinstance(diagnostics, list) or not all(isinstance(d, Diagnostic) for d in diagnostics):
        return Result("crash", seconds, problem=f"diagnostics are not a list: {diagnostics!r}")
    if not (graph is None or isinstance(graph, Graph)):
        return Result("crash", seconds, diagnostics, f"not a Graph: {type(graph).__name__}")
    if graph is None and not any(d.rule == "syntax" for d in diagnostics):
        return Result("crash", seconds, diagnostics, "no graph and no syntax diagnostic")
    bad = line_problems(diagnostics, read_text(case.data))
    if bad:
        return Result("crash", seconds, diagnostics, "diagnostic outside the file: " + bad[0])
    return Result("parsed" if graph is not None else "syntax", seconds, diagnostics)
