"""`snrun clusters`: each named cluster checked in one command on its login node (its snrun's
version and Slurm's), said in words when it cannot be."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from slurm_supernode.errors import InputError, SnrunError
from slurm_supernode.remote.config import Cluster, clusters_file, load_clusters
from slurm_supernode.remote.protocol import HIDDEN_VERB, NEEDED_VERSION
from slurm_supernode.remote.ssh import Transport


@dataclass(frozen=True)
class ClusterRow:
    name: str
    destination: str
    state: str  # ok, unchecked, or the failure's kind
    snrun: str = ""
    slurm: str = ""
    problem: str = ""

    def cells(self) -> tuple[str, str, str, str, str]:
        return (self.name, self.destination, self.state, self.snrun or "-", self.slurm or "-")

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def check_clusters(
    names: Sequence[str] = (), *, check: bool = True
) -> tuple[Path, list[ClusterRow]]:
    path = clusters_file()
    found = load_clusters(path)
    unknown = [n for n in names if n not in found]
    if unknown:
        raise InputError(
            f"no cluster {unknown[0]!r} in {path}",
            where="snrun clusters",
            hint="known: " + (", ".join(sorted(found)) or "none"),
        )
    chosen = [found[n] for n in (names or sorted(found))]
    return path, [
        check_one(c) if check else ClusterRow(c.name, c.destination, "unchecked") for c in chosen
    ]


def check_one(cluster: Cluster) -> ClusterRow:
    """One round trip where the login node's snrun is current (``snrun remote info``: its
    version and Slurm's); an older or missing snrun is found by ``snrun --version``."""
    import json

    from slurm_supernode.remote.failures import trim

    transport = Transport(cluster, batch=True)
    try:
        res = transport.call([HIDDEN_VERB, "info"])
        if res.returncode != 0:  # no snrun, or one without `snrun remote info`
            transport.version_of(transport.call(["--version"]), NEEDED_VERSION)
        info = json.loads(res.stdout)
    except SnrunError as exc:
        state = getattr(getattr(exc, "kind", None), "value", "failed")
        return ClusterRow(cluster.name, cluster.destination, state, problem=str(exc))
    except ValueError:
        return ClusterRow(
            cluster.name,
            cluster.destination,
            "failed",
            problem=f"snrun remote info said {trim(res.stdout.decode())!r}",
        )
    problem = trim(str(info.get("problem") or ""), 200)
    state = "ok" if not problem else "no slurm"
    return ClusterRow(
        cluster.name,
        cluster.destination,
        state,
        str(info.get("snrun", "")),
        str(info.get("slurm", "")),
        problem,
    )
