"""The incremental checkpoint encoder gives what a full json.dumps gives."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator

from attractor.store.checkpoint import Checkpoint, CheckpointEncoder


def _full(checkpoint: Checkpoint) -> str:
    return json.dumps(checkpoint.to_json(), separators=(",", ":"), default=str)


def _random_steps(rng: random.Random, checkpoint: Checkpoint, steps: int) -> Iterator[int]:
    """Change ``checkpoint`` as a run does, yielding after each step."""
    for step in range(steps):
        node = f"n{rng.randrange(60)}"
        checkpoint.current_node = node if rng.random() < 0.5 else None
        roll = rng.random()
        if roll < 0.5:
            checkpoint.completed_nodes.append(node)
            checkpoint.node_outcomes[node] = rng.choice(["success", "fail"])
            checkpoint.node_visits[node] += 1
        elif roll < 0.6:
            checkpoint.node_retries[node] = rng.randrange(3)
        elif roll < 0.63:
            checkpoint.node_visits[node] -= 1
            checkpoint.node_visits += Counter()  # drops zero counts, as finish_run does
        elif roll < 0.64:
            checkpoint.node_outcomes.pop(node, None)
        elif roll < 0.65:
            checkpoint.completed_nodes = checkpoint.completed_nodes[:5]
        elif roll < 0.66:
            status = checkpoint.node_outcomes.pop(node, "success")
            checkpoint.node_outcomes[node] = status  # moves to the end
        elif roll < 0.68:
            checkpoint.node_visits[f"other{step}"] = 1  # a key the engine did not name
        checkpoint.context = {"step": step, "nested": {"a": [1, 2]}}
        yield step


def test_successive_checkpoints_match_a_full_encoding() -> None:
    encoder = CheckpointEncoder()
    checkpoint = Checkpoint(node_visits=Counter())
    for _ in _random_steps(random.Random(7), checkpoint, 2000):
        assert encoder.encode(checkpoint) == _full(checkpoint)


def test_checkpoints_many_steps_apart_match_a_full_encoding() -> None:
    # A running run writes a checkpoint every few seconds: many nodes in between.
    rng = random.Random(11)
    encoder = CheckpointEncoder()
    checkpoint = Checkpoint(node_visits=Counter())
    for step in _random_steps(rng, checkpoint, 4000):
        if step % rng.choice([1, 7, 40, 300]) == 0:
            encoded = json.loads(encoder.encode(checkpoint))
            assert encoded == json.loads(_full(checkpoint))
            # Statuses keep the order the run gave them (goal gates are checked in it).
            assert list(encoded["node_outcomes"]) == list(checkpoint.node_outcomes)


def test_non_string_keys_fall_back_to_a_full_encoding() -> None:
    encoder = CheckpointEncoder()
    checkpoint = Checkpoint(node_retries={1: 2})  # type: ignore[dict-item]
    assert encoder.encode(checkpoint) == _full(checkpoint)
