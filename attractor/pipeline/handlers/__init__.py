"""Node handlers behind a registry."""
