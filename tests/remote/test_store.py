"""The shipped-code store: contents once, trees whole or absent, nothing outside the tree."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from slurm_supernode.remote import store
from slurm_supernode.remote.manifest import Manifest, build_manifest, pack


def _project(tmp_path):
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text("print('v1')\n")
    (src / "pkg" / "m.py").write_text("X = 1\n")
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o755)
    return src


def _upload(root, src, files):
    manifest = build_manifest(src, files, {"source": str(src)})
    have = store.missing(root, manifest.tree, manifest.blobs())
    if not have["tree_present"]:
        store.put(root, io.BytesIO(pack(src, manifest, have["missing"])))
    return manifest, have


def test_second_upload_sends_only_the_changed_file(tmp_path):
    src, root = _project(tmp_path), tmp_path / "store"
    files = ["train.py", "pkg/m.py", "run.sh"]
    first, have = _upload(root, src, files)
    assert len(have["missing"]) == 3
    tree = store.tree_dir(root, first.tree) / "code"
    assert (tree / "pkg" / "m.py").read_text() == "X = 1\n"
    assert (tree / "run.sh").stat().st_mode & 0o111
    assert json.loads((tree.parent / "origin.json").read_text())["source"] == str(src)
    again, have = _upload(root, src, files)
    assert again.tree == first.tree and have["tree_present"] and have["missing"] == []
    (src / "train.py").write_text("print('v2')\n")
    second, have = _upload(root, src, files)
    assert second.tree != first.tree
    assert have["missing"] == [e.sha256 for e in second.entries if e.path == "train.py"]
    assert (store.tree_dir(root, second.tree) / "code" / "train.py").read_text() == "print('v2')\n"


def _tar(members):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out.seek(0)
    return out


def test_a_damaged_or_partial_upload_leaves_no_tree(tmp_path):
    src, root = _project(tmp_path), tmp_path / "store"
    manifest = build_manifest(src, ["train.py", "pkg/m.py"], {})
    meta = json.dumps(manifest.to_json()).encode()
    sha = manifest.entries[0].sha256
    with pytest.raises(ValueError, match="damaged"):
        store.put(root, _tar([("manifest.json", meta), (f"objects/{sha}", b"other bytes")]))
    with pytest.raises(ValueError, match="never arrived"):
        store.put(root, _tar([("manifest.json", meta)]))
    assert not store.tree_dir(root, manifest.tree).exists()
    assert not list((root / "trees").glob("*")) if (root / "trees").exists() else True


@pytest.mark.parametrize("bad", ["../evil.py", "/etc/passwd", "a/../../b", "./x", ""])
def test_paths_outside_the_tree_are_refused(bad):
    data = {"version": 1, "files": [[bad, "0" * 64, 1, False]], "origin": {}}
    with pytest.raises(ValueError, match="bad path"):
        Manifest.from_json(data)


def test_unexpected_members_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unexpected entry"):
        store.put(tmp_path, _tar([("../../x", b"1")]))
