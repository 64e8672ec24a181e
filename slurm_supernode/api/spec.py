"""The job a user asks for: ``JobSpec`` (launch/jobspec.py, where the plan step reads it) and
the ``Layout`` it holds, named here so an API user imports one package."""

from __future__ import annotations

from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.placement.model import Layout

__all__ = ["JobSpec", "Layout"]
