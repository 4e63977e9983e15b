"""Node types: what each shape does when the engine reaches it, the contract
they share with the engine (Outcome, Context, StageEnv) and the codergen
adapter that turns a node into an agent session."""
