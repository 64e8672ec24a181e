from slurm_supernode import codecache

codecache.install()  # before any dataclass is created (docs/benchmarks.md: the dry run)

from slurm_supernode.cli.main import entry  # noqa: E402

entry()
