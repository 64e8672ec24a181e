"""Which container runtime a job gets: the site's word checked against what the running Slurm
offers (``slurm.container_runtimes``), or, with ``runtime: auto``, what it offers. Pure.

A runtime named by the site but absent from the cluster is refused at submit with where it was
looked for: a missing ``oci.conf`` would otherwise run the job on the host without a word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_supernode.errors import InputError

if TYPE_CHECKING:
    from slurm_supernode.slurm.container_runtimes import ContainerRuntimes

_WHERE = "--container-image"
_NAMES = "pyxis, oci or apptainer"
# What an admin does so that the cluster has the runtime (docs/containers.md, site settings).
_SETUP = {
    "pyxis": "plugstack.conf beside slurm.conf must load spank_pyxis.so before slurmd starts",
    "oci": "oci.conf beside slurm.conf (runc or crun); see docs/containers.md",
    "apptainer": "install apptainer on the login and compute nodes",
}


def choose_runtime(wanted: str, site_name: str, available: ContainerRuntimes | None) -> str:
    """``wanted``: the site's ``containers.runtime`` (a runtime, ``auto`` or ``none``);
    ``available``: None where Slurm was not asked (a dry run without a cluster): then the
    site's word stands."""
    if wanted == "none":
        raise InputError(
            f"site {site_name} has no container runtime (containers.runtime: none)",
            where=_WHERE,
            hint=f"the site file's containers.runtime names it ({_NAMES}) or says auto",
        )
    if available is None:
        if wanted == "auto":
            raise InputError(
                f"site {site_name} has no container runtime named and Slurm could not be asked",
                where=_WHERE,
                hint=f"the site file's containers.runtime names it ({_NAMES})",
            )
        return wanted
    if wanted == "auto":
        picked = available.first()
        if picked is None:
            why = "; ".join(available.missing.values())
            raise InputError(
                f"the running Slurm offers no container runtime ({why})",
                where=_WHERE,
                hint="ask the admins for pyxis, Slurm OCI or Apptainer (docs/containers.md)",
            )
        return picked
    if wanted not in available.found:
        raise InputError(
            f"site {site_name} runs {wanted}, but the running Slurm has none: "
            f"{available.missing.get(wanted, 'not found')}",
            where=_WHERE,
            hint=_SETUP.get(wanted, "fix containers.runtime in the site file"),
        )
    return wanted
