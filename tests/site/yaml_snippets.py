"""YAML pieces shared by the site tests."""

LINKS = """
links:
  node: {bandwidth_GBps: 450, latency_us: 2}
  supernode: {bandwidth_GBps: 200, latency_us: 4}
  inter: {bandwidth_GBps: 50, latency_us: 8}
"""
