"""placement layer."""
