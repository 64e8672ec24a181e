"""The login node's side of shipped code: a content-addressed store (runs there, through the
hidden ``snrun remote`` verb).

``<store>/objects/<sha256>``: each content once. ``<store>/trees/<tree>/code/``: a code folder
assembled from a manifest, made under a temporary name and renamed into place when complete,
so a tree that exists is whole (an interrupted upload leaves no tree, and submits nothing).
``trees/<tree>/origin.json`` records where the laptop took it from.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.remote.manifest import MANIFEST, Manifest, check_sha, mode_of

CODE = "code"


def tree_dir(store: Path, tree: str) -> Path:
    return store / "trees" / check_sha(tree)


def object_path(store: Path, sha: str) -> Path:
    return store / "objects" / check_sha(sha)[:2] / sha


def missing(store: Path, tree: str, blobs: Iterable[str]) -> dict[str, Any]:
    """What the store lacks of a tree: nothing when the tree is there, else the contents."""
    where = tree_dir(store, tree)
    if (where / CODE).is_dir():
        return {"tree_present": True, "missing": [], "tree_dir": str(where.resolve())}
    lacking = [s for s in blobs if not object_path(store, s).is_file()]
    return {"tree_present": False, "missing": lacking, "tree_dir": str(where.absolute())}


def put(store: Path, stream: IO[bytes]) -> dict[str, Any]:
    """Take a tar of a manifest and contents, store each content (checked against its hash),
    then assemble the tree. Raises ValueError/OSError, leaving no tree, on anything wrong."""
    manifest: Manifest | None = None
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            data = tar.extractfile(member) if member.isfile() else None
            if data is None:
                raise ValueError(f"unexpected entry {member.name!r} in the upload")
            if member.name == MANIFEST:
                manifest = Manifest.from_json(json.loads(data.read()))
            elif member.name.startswith("objects/"):
                _store_object(store, member.name[len("objects/") :], data.read())
            else:
                raise ValueError(f"unexpected entry {member.name!r} in the upload")
    if manifest is None:
        raise ValueError("the upload has no manifest")
    return {"tree_dir": str(assemble(store, manifest).resolve()), "files": len(manifest.entries)}


def _store_object(store: Path, sha: str, content: bytes) -> None:
    target = object_path(store, sha)
    if hashlib.sha256(content).hexdigest() != sha:
        raise ValueError(f"content {sha[:12]} arrived damaged (hash differs)")
    if target.is_file():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def assemble(store: Path, manifest: Manifest) -> Path:
    """The tree's folder from stored contents: built aside, renamed into place when whole."""
    where = tree_dir(store, manifest.tree)
    if (where / CODE).is_dir():
        return where
    absent = [e.path for e in manifest.entries if not object_path(store, e.sha256).is_file()]
    if absent:
        raise ValueError(f"{len(absent)} file(s) of the tree never arrived: {absent[:3]}")
    where.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".tmp-{manifest.tree[:12]}-", dir=where.parent))
    try:
        for entry in manifest.entries:
            dst = building / CODE / entry.path
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(object_path(store, entry.sha256), dst)
            os.chmod(dst, mode_of(entry))
        (building / CODE).mkdir(exist_ok=True)
        write_json_atomic(building / "origin.json", {**manifest.origin, "tree": manifest.tree})
        os.chmod(building, 0o755)
        try:
            os.rename(building, where)
        except OSError:
            if not (where / CODE).is_dir():  # not another upload of the same tree
                raise
    finally:
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)
    return where
