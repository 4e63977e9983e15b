"""Model interface, message types, provider adapters and the scripted model."""
