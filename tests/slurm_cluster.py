"""Placeholder: the minicluster fixture is added with contrib/minicluster."""
