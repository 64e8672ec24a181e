"""slurm-supernode: schedule and use Slurm super nodes as one machine."""

__version__ = "0.2.0"
