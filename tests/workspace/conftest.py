"""The workspace tests drive the real CLI and real git."""
