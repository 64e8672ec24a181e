"""snrun on a cluster's login node, from a laptop: the clusters file, the SSH transport and the
shipped-code store. A leaf like ``slurm/``: it imports only the root modules, and only
``remote/ssh.py`` spawns ``ssh`` (tests/test_layers.py)."""
