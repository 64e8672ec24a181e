"""The job a user asks for: ``JobSpec`` (launch/jobspec.py, where the plan step reads it) and
the ``Layout`` and ``ContainerOptions`` it holds (the latter also the ``container`` of the
jobs snrun submits for itself: ``bench.BenchJob``, ``doctor.DoctorJob``,
``health.HealthOptions``), named here so an API user imports one package."""

from __future__ import annotations

from slurm_supernode.launch.container_options import ContainerOptions
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.placement.model import Layout

__all__ = ["ContainerOptions", "JobSpec", "Layout"]
