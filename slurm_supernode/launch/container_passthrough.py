"""Slurm's own container options given to sbatch through snrun (``--sbatch=--container=B``,
``#SBATCH --container=B``, pyxis' ``--container-image`` as a raw sbatch option) are refused at
submit, with the fix in one line.

They would put the whole job in the container: the batch script, snrun's supervisor and every
step. A bundle made the usual way (``runc spec``) has a PID namespace in its config.json, and
with it every node is PID 1 on host "vm": torchrun's rendezvous hangs until its timeout (300 s
seen with 2 nodes) and ``scancel`` waits a minute for the step's I/O. snrun's own
``--container-image`` runs only each node's torchrun in the image, with the PID, network and
UTS namespaces dropped (docs/containers.md), which is the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

from slurm_supernode.errors import InputError

# sbatch options that put the batch script in a container: Slurm's OCI and pyxis' image
_WHOLE_JOB = ("--container", "--container-image")


def pid_namespace(bundle: str) -> bool:
    """Does the bundle's config.json ask for a PID namespace (as ``runc spec`` writes it)?"""
    try:
        config = json.loads(Path(bundle, "config.json").read_text())
        spaces = config.get("linux", {}).get("namespaces", [])
        return any(isinstance(ns, dict) and ns.get("type") == "pid" for ns in spaces)
    except (OSError, ValueError, AttributeError):
        return False


def check_sbatch_containers(sbatch_args: tuple[str, ...], workdir: str) -> None:
    """Refuse a whole-job container among the raw sbatch options (the script's #SBATCH lines
    that snrun does not know arrive here too)."""
    for i, arg in enumerate(sbatch_args):
        name, sep, value = arg.partition("=")
        if name not in _WHOLE_JOB:
            continue
        if not sep and i + 1 < len(sbatch_args):
            value = sbatch_args[i + 1]
        bundle = str(Path(workdir, value)) if value else ""
        why = (
            "its config.json has a PID namespace (runc spec puts one there): every node would "
            "be PID 1 and torchrun's rendezvous would hang"
            if name == "--container" and bundle and pid_namespace(bundle)
            else "it would run the whole job (batch script, supervisor, every step) in the "
            "container, and a PID namespace there hangs torchrun's rendezvous"
        )
        raise InputError(
            f"sbatch {name}={value or '...'} is refused: {why}",
            where=f"--sbatch={name}",
            hint=f"give it to snrun as --container-image {value or 'IMAGE'}: each node's "
            "torchrun runs in it without the PID namespace (docs/containers.md)",
        )
