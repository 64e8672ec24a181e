"""YAML pieces shared by the site tests."""

LINKS = """
links:
  node: {bandwidth_gbps: 450, latency_us: 2}
  supernode: {bandwidth_gbps: 200, latency_us: 4}
  inter: {bandwidth_gbps: 50, latency_us: 8}
"""
