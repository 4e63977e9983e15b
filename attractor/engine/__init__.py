"""The run itself: setup, the loop over nodes, a node's step, routing, retries,
the run's state and events, and the executor seam where a run executes."""
