"""Secret redaction benchmark: what scrubbing a tool's output costs.

Run: ``python benchmarks/bench_redact.py [--mb 10]``. Builds MB megabytes of
log-like output (with ``task-``/``disk-`` near misses of the ``sk-`` prefix and
a planted key every 100,000 lines) and times, median of 5:

- ``Redactor.text`` on it as one ``str`` and ``Redactor.data`` as ``bytes``;
- ``Redactor.scrub_file`` on it as a stdout file, with and without a secret in it;
- for reference, one regular-expression alternation of every pattern and value:
  plain, and with a named group per kind and a word boundary (what telling the
  kinds apart inside one regex takes; ``re`` scans that one many times slower).
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from attractor.redact import KEY_PATTERNS, Redactor

ENV = {
    "OPENAI_API_KEY": "sk-test-0123456789abcdefghijklmnopqrstuv",
    "DEPLOY_TOKEN": "dt-9f8e7d6c5b4a3210",
    "GITHUB_TOKEN": "not-a-real-github-token-value",
    "DB_PASSWORD": "correct-horse-battery",
    "HOME": "/root",
}
LINE = "2026-01-01 12:00:00 INFO task-7 wrote 4096 bytes to disk-2 (batch 12345 of 99999)\n"


def output(megabytes: float, planted: bool) -> str:
    lines = [LINE] * int(megabytes * 1024 * 1024 / len(LINE))
    if planted:
        for i in range(0, len(lines), 100_000):
            lines[i] = f"key {ENV['OPENAI_API_KEY']} and AKIAIOSFODNN7EXAMPLE\n"
    return "".join(lines)


def median_ms(work: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def alternation(redactor_env: dict[str, str], *, named: bool) -> re.Pattern[str]:
    """Every value and pattern in one regex; ``named``: a group per pattern (to tell
    which matched) and a word boundary before it, as a one-regex design needs."""
    values = [re.escape(v) for v in redactor_env.values() if len(v) >= 8]
    if named:
        kinds = [rf"(?P<k{i}>\b{p})" for i, (_, p) in enumerate(KEY_PATTERNS)]
        return re.compile("|".join([f"(?P<value>{'|'.join(values)})", *kinds]))
    return re.compile("|".join([*values, *(f"(?:{p})" for _, p in KEY_PATTERNS)]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=10.0)
    args = parser.parse_args()
    redactor = Redactor.from_environment(ENV)
    clean, dirty = output(args.mb, False), output(args.mb, True)
    size = len(clean.encode()) / 1e6
    print(f"{size:.1f} MB of output, {len(redactor.names)} secret variables")
    print(f"text, no secret:        {median_ms(lambda: redactor.text(clean)):7.1f} ms")
    print(f"text, secrets planted:  {median_ms(lambda: redactor.text(dirty)):7.1f} ms")
    raw = dirty.encode()
    print(f"bytes, secrets planted: {median_ms(lambda: redactor.data(raw)):7.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stdout.txt"
        path.write_text(clean)
        print(f"scrub_file, no secret:  {median_ms(lambda: redactor.scrub_file(path)):7.1f} ms")

        def scrub_dirty() -> None:
            path.write_bytes(raw)
            redactor.scrub_file(path)

        write_only = median_ms(lambda: path.write_bytes(raw))
        print(f"scrub_file, planted:    {median_ms(scrub_dirty) - write_only:7.1f} ms")
    for named in (False, True):
        pattern = alternation(ENV, named=named)
        ref = median_ms(lambda: pattern.sub("[redacted]", dirty), repeat=3)  # noqa: B023
        label = "named groups" if named else "plain"
        print(f"ref. one alternation, {label}: {ref:7.1f} ms")


if __name__ == "__main__":
    main()
