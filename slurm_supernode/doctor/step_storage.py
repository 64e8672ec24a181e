"""Step 6, storage: each node's write and read rate and free space in the job and checkpoint
directories against the site's floors and against each other."""

from __future__ import annotations

from slurm_supernode.doctor.model import SKIP, DoctorFacts, Finding, StorageFacts
from slurm_supernode.doctor.verdicts import below_peers, hosts_text
from slurm_supernode.health.checks import CRITICAL, OK, WARNING
from slurm_supernode.site.model import DoctorSettings, Site


def storage_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    out: list[Finding] = []
    by_path: dict[str, list[tuple[str, StorageFacts]]] = {}
    for n in facts.nodes:
        for s in n.storage:
            by_path.setdefault(s.path, []).append((n.host, s))
    if not by_path:
        return [Finding("storage", "storage", SKIP, "no directory tested")]
    floors = (
        f"write >= {cfg.min_write_mbps:g} MB/s, read >= {cfg.min_read_mbps:g} MB/s, "
        f">= {cfg.min_free_gb:g} GB free"
    )
    for path, items in by_path.items():
        ok_items = []
        for host, s in items:
            problems = _problems(s, cfg)
            if problems:
                out.append(_below_floor(path, host, problems, floors))
            else:
                ok_items.append((host, s))
        if ok_items:
            out.append(_passed(path, ok_items, cfg, floors))
    return out


def _rates(s: StorageFacts) -> tuple[float, float]:
    """Write and read rate of a directory the probe tested (it gives both unless it failed)."""
    assert s.write_mbps is not None and s.read_mbps is not None, s
    return s.write_mbps, s.read_mbps


def _problems(s: StorageFacts, cfg: DoctorSettings) -> list[str]:
    """What puts one node's directory below the site's floors (or its probe's error)."""
    if s.error:
        return [s.error]
    problems = []
    write, read = _rates(s)
    if cfg.min_write_mbps and write < cfg.min_write_mbps:
        problems.append(f"write {write:.0f} MB/s")
    if cfg.min_read_mbps and read < cfg.min_read_mbps:
        problems.append(f"read {read:.0f} MB/s")
    if cfg.min_free_gb and (s.free_bytes or 0) / 1e9 < cfg.min_free_gb:
        problems.append(f"{(s.free_bytes or 0) / 1e9:.1f} GB free")
    return problems


def _below_floor(path: str, host: str, problems: list[str], floors: str) -> Finding:
    return Finding(
        "storage",
        "storage",
        CRITICAL,
        f"{path}: " + ", ".join(problems),
        expected=floors,
        where=host,
        next=f"df -h {path}; the file system's health; another "
        "checkpoint dir (site doctor.checkpoint_dir)",
    )


def _passed(
    path: str, ok_items: list[tuple[str, StorageFacts]], cfg: DoctorSettings, floors: str
) -> Finding:
    """The nodes above the floors, as one finding: their range, and a writer much slower than
    the others' median as a warning."""
    writes = [_rates(s)[0] for _, s in ok_items]
    reads = [_rates(s)[1] for _, s in ok_items]
    slowest = ok_items[writes.index(min(writes))][0]
    free = min((s.free_bytes or 0) for _, s in ok_items) / 1e9
    status = OK
    note = ""
    if below_peers(writes, cfg.slow_pct):
        status, note = WARNING, f"; slowest writer {slowest}"
    return Finding(
        "storage",
        "storage",
        status,
        f"{path}: write {min(writes):.0f}-"
        f"{max(writes):.0f} MB/s, read {min(reads):.0f}-{max(reads):.0f} MB/s"
        f" (page cache dropped), >= {free:.1f} GB free{note}",
        expected=floors,
        where=hosts_text(h for h, _ in ok_items),
        next="" if status == OK else f"the disk or mount of {slowest}",
    )
