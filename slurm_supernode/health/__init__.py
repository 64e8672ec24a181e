"""health layer."""
