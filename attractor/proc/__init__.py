"""Child processes that cannot outlive their step: process groups, kill
grace and the cheap direct-exec start path."""
