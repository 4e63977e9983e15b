"""Pipeline: DOT loading, graph model, lint, engine and handlers."""
