"""launch layer."""
