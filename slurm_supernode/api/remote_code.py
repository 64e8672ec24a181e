"""The code goes with the job: the script's folder shipped to the login node, incrementally.

The files are those a local snapshot would copy (``launch/snapshot.py``: git's files in a work
tree, else the folder within the size limit), hashed here; the login node says which contents
it lacks (one round trip), only those are sent (one more), and the tree is assembled there
whole or not at all. The job then snapshots that tree as usual, so what was sent is what ran.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from slurm_supernode.launch.snapshot import collect_snapshot, limit_bytes, plan_snapshot
from slurm_supernode.remote import failures
from slurm_supernode.remote.manifest import Manifest, build_manifest, pack, sent_size
from slurm_supernode.remote.protocol import HIDDEN_VERB
from slurm_supernode.remote.ssh import Transport


@dataclass(frozen=True)
class Shipped:
    """A code folder on the login node: where, and what this upload sent."""

    tree_dir: str  # absolute, on the cluster
    program: str  # the script's path there
    files: int
    sent_files: int
    sent_bytes: int

    def summary(self, cluster: str) -> str:
        if not self.sent_files:
            return f"code: {self.files} file(s) already on {cluster} ({self.tree_dir})"
        return (
            f"code: sent {self.sent_files} of {self.files} file(s), {self.sent_bytes} bytes, "
            f"to {cluster} ({self.tree_dir})"
        )


def local_manifest(script: Path) -> Manifest:
    """The script's folder as the local snapshot would take it (same rules, same limit)."""
    snap = plan_snapshot(script.name, False, str(script.parent), Path("/nonexistent-job-dir"))
    assert snap is not None
    files, record, _diff = collect_snapshot(snap, limit_bytes())
    origin = {k: record.get(k) for k in ("source", "kind", "repo", "commit", "dirty")}
    import socket

    origin["host"] = socket.gethostname()
    return build_manifest(snap.source, files, origin)


def ship(transport: Transport, script: Path) -> Shipped:
    """Send the script's folder; nothing is assembled there unless every content arrived."""
    manifest = local_manifest(script.resolve())
    store = transport.cluster.code_dir
    ask = json.dumps({"tree": manifest.tree, "blobs": manifest.blobs()}).encode()
    have = _json(transport, ["have", "--store", store], ask)
    lacking = have.get("missing", [])
    missing = [str(s) for s in lacking] if isinstance(lacking, list) else []
    tree_dir = str(have["tree_dir"])
    if not have.get("tree_present"):
        data = pack(script.resolve().parent, manifest, missing)
        tree_dir = str(_json(transport, ["put", "--store", store], data)["tree_dir"])
    rel = script.name
    return Shipped(
        tree_dir=tree_dir,
        program=f"{tree_dir}/code/{rel}",
        files=len(manifest.entries),
        sent_files=len(missing) if not have.get("tree_present") else 0,
        sent_bytes=sent_size(manifest, missing) if not have.get("tree_present") else 0,
    )


def _json(transport: Transport, args: list[str], stdin: bytes) -> dict[str, object]:
    res = transport.call([HIDDEN_VERB, *args], stdin=stdin)
    if res.returncode != 0:
        raise failures.RemoteError(
            f"code upload failed, nothing submitted: {failures.trim(res.stderr) or res.returncode}",
            kind=failures.RemoteErrorKind.UPLOAD,
            where=f"cluster {transport.cluster.name!r}",
        )
    try:
        out = json.loads(res.stdout)
    except ValueError:
        raise failures.RemoteError(
            f"code store answered {res.stdout[:200]!r}",
            kind=failures.RemoteErrorKind.UPLOAD,
            where=f"cluster {transport.cluster.name!r}",
        ) from None
    if not isinstance(out, dict):
        raise failures.RemoteError(
            "code store answered no object",
            kind=failures.RemoteErrorKind.UPLOAD,
            where=f"cluster {transport.cluster.name!r}",
        )
    return out


def report(shipped: Shipped, cluster: str) -> None:
    print(f"snrun: {shipped.summary(cluster)}", file=sys.stderr)
