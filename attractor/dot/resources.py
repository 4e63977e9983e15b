"""The node attribute ``resources``: what a node asks of the machine that runs it.

``resources="cpu=4,gpu=1,bigmem=1"``: ``cpu`` and ``gpu`` are counts of cores
and GPUs, any other name is a custom resource of the cluster (a Ray resource).
Amounts are positive numbers (fractions allowed). The local executor ignores
them; the Ray executor turns them into the task's resource request.
"""

from __future__ import annotations

import math
import re

RESOURCES_ATTR = "resources"
EXAMPLE = "cpu=4,gpu=1"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")


def parse_resources(text: str) -> dict[str, float]:
    """``"cpu=4,gpu=1"`` -> ``{"cpu": 4.0, "gpu": 1.0}``.

    Raises:
        ValueError: a part is not ``NAME=AMOUNT``, an amount is not a positive
            number, or a name appears twice (the message names the part).
    """
    result: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, amount = (s.strip() for s in part.partition("="))
        if not sep or not _NAME.fullmatch(name):
            raise ValueError(f"{part!r} is not NAME=AMOUNT, e.g. {EXAMPLE}")
        try:
            value = float(amount)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{part!r}: the amount must be a number above zero")
        if name in result:
            raise ValueError(f"{name} is given twice")
        result[name] = value
    return result
