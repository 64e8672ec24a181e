"""The only package that runs Slurm commands: typed results, one-line SlurmErrors.

Modules: `runner` (run one command), `parse` (scontrol/sacct text), `version` (version and
feature detection), `jobs` (submit, inspect, cancel, requeue, wait), `nodes` (nodes,
partitions, drain/resume).
"""
