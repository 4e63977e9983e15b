"""The runtime: the run lifecycle, the node step, routing, retries,
checkpoints, the run directory and the event bus."""
