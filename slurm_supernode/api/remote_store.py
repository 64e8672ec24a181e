"""The login node's side of `snrun --cluster`, as `snrun remote have|put|info` calls it: the
shipped-code store (remote/store.py does the work; a bad request is an InputError, never a
traceback) and what `snrun clusters` asks of a login node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from slurm_supernode.errors import InputError
from slurm_supernode.remote import store


def store_have(root: Path, request: str) -> dict[str, Any]:
    """Which contents of a tree the store lacks (request: ``{"tree": H, "blobs": [...]}``)."""
    try:
        ask = json.loads(request)
        return store.missing(root, str(ask["tree"]), [str(b) for b in ask["blobs"]])
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"bad request: {exc}", where="snrun remote have") from None


def store_put(root: Path, stream: IO[bytes]) -> dict[str, Any]:
    """Store an upload (a tar of a manifest and contents) and assemble its tree."""
    import tarfile

    try:
        return store.put(root, stream)
    except (ValueError, KeyError, TypeError, tarfile.TarError) as exc:
        raise InputError(f"bad upload, nothing stored: {exc}", where="snrun remote put") from None


def login_info() -> dict[str, Any]:
    """This login node's snrun and Slurm versions (Slurm's problem in words, if it has one)."""
    from slurm_supernode import __version__
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.slurm.version import slurm_version

    try:
        return {"snrun": __version__, "slurm": str(slurm_version()), "problem": ""}
    except SlurmError as exc:
        return {"snrun": __version__, "slurm": "", "problem": f"Slurm: {exc}"}
