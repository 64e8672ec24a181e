"""Bounds of a site config: far above any real site, low enough that loading a typo
(``n[0-9999999]``) or a hostile file answers at once with the number instead of allocating
gigabytes. The reader and the builders check them; perf/bench_site.py loads a site near them."""

from __future__ import annotations

MAX_FILE_BYTES = 64 << 20
MAX_YAML_VALUES = 1_000_000  # after aliases are expanded ("billion laughs")
MAX_SITE_NODES = 250_000
MAX_SITE_DEVICES = 1_000_000
MAX_DEVICES_PER_NODE = 1024
MAX_CPUS = 65_535  # slurm.conf CPUs= is 16 bits
MAX_MEMORY_MB = 1 << 40
MAX_INT = (1 << 31) - 1
