from slurm_supernode.cli.main import entry

entry()
