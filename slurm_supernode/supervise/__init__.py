"""supervise layer."""
