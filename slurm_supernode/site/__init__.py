"""site layer."""
