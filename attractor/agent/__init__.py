"""The coding-agent loop: session, tools, turn budget, transcript."""
