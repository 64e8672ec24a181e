"""What a shipped code folder is: its files by content (sha256), and the tree that names them.

The laptop hashes the snapshot's files (the same files a local snapshot would copy), asks the
login node which contents it lacks, and sends only those; the tree's name is the hash of the
whole manifest, so the same code is the same folder there, and a changed file a new one.
"""

from __future__ import annotations

import hashlib
import io
import json
import stat
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

VERSION = 1
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Entry:
    path: str  # relative, '/'-separated
    sha256: str
    size: int
    executable: bool


@dataclass(frozen=True)
class Manifest:
    entries: tuple[Entry, ...]
    origin: Mapping[str, Any]  # where it came from (the snapshot record); not in the hash

    @property
    def tree(self) -> str:
        """The tree's name: the hash of its files (paths, contents, modes)."""
        canon = json.dumps([[e.path, e.sha256, e.executable] for e in self.entries])
        return hashlib.sha256(canon.encode()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "tree": self.tree,
            "files": [[e.path, e.sha256, e.size, e.executable] for e in self.entries],
            "origin": dict(self.origin),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        if data.get("version") != VERSION:
            raise ValueError(f"manifest version {data.get('version')!r}, not {VERSION}")
        entries = tuple(
            Entry(check_relative(str(p)), check_sha(str(h)), int(n), bool(x))
            for p, h, n, x in data["files"]
        )
        return cls(entries, dict(data.get("origin") or {}))

    def blobs(self) -> list[str]:
        return sorted({e.sha256 for e in self.entries})


def check_relative(path: str) -> str:
    """A path inside the tree (nothing absolute, no '..')."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("..", ".", "") for p in parts):
        raise ValueError(f"bad path in manifest: {path!r}")
    return path


def check_sha(text: str) -> str:
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"bad content hash in manifest: {text!r}")
    return text


def build_manifest(source: Path, files: Iterable[str], origin: Mapping[str, Any]) -> Manifest:
    """Hash ``files`` (relative to ``source``; those that are not regular files are left out,
    as the local snapshot leaves them)."""
    entries = []
    for rel in sorted(set(files)):
        path = source / rel
        try:
            st = path.stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        posix = PurePosixPath(*Path(rel).parts).as_posix()
        entries.append(Entry(posix, digest.hexdigest(), st.st_size, bool(st.st_mode & 0o111)))
    return Manifest(tuple(entries), origin)


def pack(source: Path, manifest: Manifest, missing: Iterable[str]) -> bytes:
    """A tar of the manifest and the contents in ``missing`` (``objects/<sha>``), in memory:
    a snapshot is limited in size (SNRUN_SNAPSHOT_MAX_MB)."""
    by_sha = {e.sha256: e for e in manifest.entries}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        data = json.dumps(manifest.to_json()).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for sha in sorted(set(missing)):
            entry = by_sha[sha]
            with (source / entry.path).open("rb") as fh:
                content = fh.read()
            if hashlib.sha256(content).hexdigest() != sha:
                raise OSError(f"{source / entry.path} changed while it was being sent")
            info = tarfile.TarInfo(f"objects/{sha}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def sent_size(manifest: Manifest, missing: Iterable[str]) -> int:
    sizes = {e.sha256: e.size for e in manifest.entries}
    return sum(sizes[s] for s in set(missing))


def mode_of(entry: Entry) -> int:
    return 0o755 if entry.executable else 0o644


def relpath_parts(entry: Entry) -> tuple[str, ...]:
    return tuple(PurePosixPath(entry.path).parts)
