"""Scheduling-cost benchmark (`make bench-sched`): what whole super nodes cost real Slurm.

Replays the job mix of sched_mix.py (sizes and durations fitted to the published Helios
figures, bursty arrivals) as `sleep` jobs through the real Slurm of SLURM_CONF (the
minicluster's 8 super nodes x 18 trays, 16 used + 2 spare, 4 GPUs each) under one policy:

  plain      topology/tree, plain `sbatch -N n --exclusive` in a partition the plugin leaves
             alone (debug, the same 144 nodes): no topology constraint
  block      topology/block, users ask for segments: n <= 16 `--segment=n`; n > 16 rounded up
             to whole super nodes with `--segment=16`
  lua        snrun's job_submit.lua in partition main: every plain `sbatch -N n` is rounded to
             whole super nodes; a job over one super node (refused by the plugin on a
             features site) goes in as snrun's own request (plan_request: a heterogeneous job
             of k one-super-node components)
  lua-small  the same, with one-tray jobs in partition `debug` (not enforced): the tuning
             that keeps single-GPU work off whole super nodes
  lua-aligned  the same plain `sbatch -N n` in partition main, with the plugin exported from
             the site with `slurm.small_jobs: aligned` (sched_run.sh installs it; checked here
             with a held probe job): a job of up to 16 trays keeps its size inside one super
             node, only jobs over one super node are rounded (and go in as snrun's request)

and measures from what Slurm recorded (SubmitTime, StartTime, EndTime, NodeList):
GPU utilization over the makespan (asked GPUs x run time / all 576 GPUs x makespan; also the
allocated GPUs), mean and p95 queue wait, the share of multi-node jobs whose TP (4) and EP
(min(nodes, 16) trays) groups, as `snrun plan` forms them on the nodes Slurm gave, stay in one
super node, and every 2 s the super nodes left fragmented (partly busy, with idle trays that a
whole-super-node job cannot use). Raw records and the summary go to --out.

Jobs cancelled by anyone (``--budget``: the replay's own cut; an admin's scancel) are recorded
as they ended: one cancelled before it started has no nodes and no start (counted apart, its
wait up to the cancel a lower bound); one cancelled while running counts for the time it ran.

    python3 perf/bench_sched.py --mode plain --out perf/results/sched
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))

from sched_mix import GPUS_PER_NODE, Job, make_mix  # noqa: E402

from slurm_supernode.hostlist import expand, fold  # noqa: E402

USED = 16  # trays a whole-super-node job takes (18 minus 2 spares)
MODES = ("plain", "block", "lua", "lua-small", "lua-aligned")
NO_NODES = ("", "(null)", "None", "None assigned")  # NodeList of a job that never ran


def run(*argv: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)


def supernodes() -> dict[str, list[str]]:
    """sn feature -> nodes, from Slurm (sinfo)."""
    out = run("sinfo", "-h", "-N", "-o", "%N %f").stdout
    sns: dict[str, set[str]] = {}
    for line in out.splitlines():
        node, feats = line.split()
        for f in feats.split(","):
            if f.startswith("sn"):
                sns.setdefault(f, set()).add(node)
    return {k: sorted(v, key=lambda n: int(n[1:])) for k, v in sorted(sns.items())}


def sbatch_args(job: Job, mode: str) -> list[str]:
    """The request a user of ``mode`` types for ``job`` (lua: before the plugin)."""
    n = job.nodes
    limit = str(math.ceil(job.duration_s / 60) + 2)
    base = [f"--job-name=sched-{job.index}", "--exclusive", "-t", limit, "-o", "/dev/null"]
    if mode == "plain":
        return [*base, "-p", "debug", "-N", str(n)]
    if mode in ("lua", "lua-aligned"):
        return [*base, "-p", "main", "-N", str(n)]
    if mode == "lua-small":
        return [*base, "-p", "debug" if n == 1 else "main", "-N", str(n)]
    if n <= USED:  # block
        return [*base, "-p", "main", "-N", str(n), f"--segment={n}"]
    k = math.ceil(n / USED)
    return [*base, "-p", "main", "-N", str(k * USED), f"--segment={USED}"]


def snrun_request(job: Job, site_file: str) -> list[str]:
    """snrun's request for a job over several super nodes (what `snrun -S k` submits)."""
    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.launch.jobspec import JobSpec
    from slurm_supernode.launch.request import plan_request
    from slurm_supernode.site.loader import load_site

    site = load_site(site_file)
    k = math.ceil(job.nodes / USED)
    limit = str(math.ceil(job.duration_s / 60) + 2)
    spec = JobSpec(program="x", supernodes=k, time=limit, job_name=f"sched-{job.index}")
    req = plan_request(spec, site, gather_facts(site, required=True))
    return [a for a in req.sbatch_args() if not a.startswith(("--output", "--signal"))]


def submit(job: Job, mode: str, site_file: str) -> dict:
    script = f"#!/bin/bash\nsleep {job.duration_s}\n"
    args = sbatch_args(job, mode)
    proc = run("sbatch", "--parsable", *args, stdin=script)
    how = "sbatch"
    if proc.returncode != 0 and mode.startswith("lua") and "snrun -S" in proc.stderr:
        args = [*snrun_request(job, site_file), "-o", "/dev/null"]
        proc = run("sbatch", "--parsable", *args, stdin=script)
        how = "snrun"
    if proc.returncode != 0:
        return {"index": job.index, "error": proc.stderr.strip()[-300:]}
    return {"index": job.index, "job_id": int(proc.stdout.split(";")[0]), "how": how}


def running_nodes() -> list[str]:
    out = run("squeue", "-h", "-t", "R", "-o", "%N").stdout
    return [n for line in out.split() if line for n in expand(line)]


def pending_count() -> int:
    return len(run("squeue", "-h", "-t", "PD", "-o", "%i").stdout.split())


def sample(sns: dict[str, list[str]], t0: float) -> dict:
    busy = set(running_nodes())
    frag = 0
    for nodes in sns.values():
        used = sum(n in busy for n in nodes)
        idle = len(nodes) - used
        if used and 0 < idle < USED:
            frag += 1  # busy trays and idle ones, too few idle for a whole-super-node job
    return {"t": round(time.monotonic() - t0, 1), "busy_nodes": len(busy), "fragmented": frag,
            "pending": pending_count()}  # fmt: skip


TIME_RE = re.compile(r"(\w+)=(\S+)")


def records(job_id: int) -> list[dict[str, str]]:
    """Every component of the job as scontrol shows it (one line each with -o)."""
    out = run("scontrol", "-o", "show", "job", str(job_id)).stdout
    return [dict(TIME_RE.findall(line)) for line in out.splitlines() if line.strip()]


def ts(value: str | None) -> float | None:
    """A scontrol time, None for Unknown/None/N/A (a job that never started or ended)."""
    try:
        return datetime.strptime(value or "", "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        return None


def job_row(row: dict, sub: dict, recs: list[dict[str, str]], sns: dict[str, list[str]]) -> dict:
    """The replay row of one submitted job from its scontrol records (every component). Pure:
    a cancelled job (before or while running) or a purged record does not stop the replay."""
    if not recs:
        return row | {"job_id": sub["job_id"], "how": sub["how"],
                      "error": "no record left in slurmctld (purged: MinJobAge)"}  # fmt: skip
    lead = recs[0]
    nodelists = [r.get("NodeList", "") for r in recs]
    started = all(nl not in NO_NODES for nl in nodelists) and ts(lead.get("StartTime")) is not None
    row |= {"job_id": sub["job_id"], "how": sub["how"], "state": lead.get("JobState", "?"),
            "submit": ts(lead.get("SubmitTime")), "end": ts(lead.get("EndTime")),
            "started": started}  # fmt: skip
    if not started:  # cancelled (or failed) before it got nodes: no start, no nodes
        return row | {"nodes_alloc": 0, "supernodes": []}
    hosts = [h for nl in nodelists for h in expand(nl)]
    touched = sorted(sn for sn, v in sns.items() if set(v) & set(hosts))
    return row | {"start": ts(lead["StartTime"]), "nodes": fold(hosts),
                  "nodes_alloc": len(hosts), "supernodes": touched}  # fmt: skip


def aligned(hosts: list[str], site_file: str) -> bool:
    """TP (4 GPUs) and EP (min(nodes, 16) trays) groups of `snrun plan` inside super nodes."""
    ep = min(len(hosts), USED)
    proc = run(sys.executable, "-m", "slurm_supernode", "plan", "--site", site_file,
               "--nodelist", fold(hosts), "--nproc-per-node", str(GPUS_PER_NODE),
               "--tp", str(GPUS_PER_NODE), "--ep", str(ep), "--json", timeout=120)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"bench_sched: snrun plan failed: {proc.stderr.strip()}")
    groups = json.loads(proc.stdout)["groups"]
    return all(groups[g]["crossings"]["supernode"] == 0 for g in ("tp", "ep"))


def cancel(subs: list[dict]) -> None:
    """End what is left of the replay (its own jobs, by id)."""
    ids = [str(s["job_id"]) for s in subs if "job_id" in s]
    for i in range(0, len(ids), 200):
        run("scancel", *ids[i : i + 200])


def submit_all(jobs: list[Job], mode: str, site_file: str, t0: float, deadline: float | None):
    """Submit every job at its offset (4 at a time); none after the deadline."""
    subs = []
    with ThreadPoolExecutor(4) as pool:
        futures = []
        for job in jobs:
            if deadline is not None and t0 + job.submit_s >= deadline:
                subs.append({"index": job.index, "error": "not submitted: --budget ran out"})
                continue
            delay = job.submit_s - (time.monotonic() - t0)
            if delay > 0:
                time.sleep(delay)
            futures.append(pool.submit(submit, job, mode, site_file))
        subs += [f.result() for f in futures]
    return sorted(subs, key=lambda s: s["index"])


def wait_out(jobs: list[Job], subs: list[dict], deadline: float | None) -> bool:
    """Wait until no job of the replay is left; at the deadline cancel the rest. True: cut."""
    names = ",".join(f"sched-{j.index}" for j in jobs)
    cut = False
    while run("squeue", "-h", "-o", "%i", "-n", names).stdout.split():
        if deadline is not None and time.monotonic() >= deadline and not cut:
            cancel(subs)  # the budget's cut: what is left ends as CANCELLED
            cut = True
        time.sleep(2)
    return cut


def replay(
    mode: str, jobs: list[Job], site_file: str, out: Path, budget_s: float | None = None
) -> dict:
    sns = supernodes()
    if sum(len(v) for v in sns.values()) != 144 or len(sns) != 8:
        raise SystemExit("bench_sched: needs the 8 x 18 cluster (see make bench-sched)")
    samples: list[dict] = []
    done = threading.Event()
    t0 = time.monotonic()

    def sampler() -> None:
        while not done.is_set():
            samples.append(sample(sns, t0))
            done.wait(2.0)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    deadline = None if budget_s is None else t0 + budget_s
    subs = submit_all(jobs, mode, site_file, t0, deadline)
    cut = wait_out(jobs, subs, deadline)
    done.set()
    th.join()
    rows = []
    by_index = {j.index: j for j in jobs}
    for s in subs:
        job = by_index[s["index"]]
        row = {"index": job.index, "gpus": job.gpus, "nodes_asked": job.nodes,
               "duration_s": job.duration_s, "offset_s": job.submit_s}  # fmt: skip
        if "error" in s:
            rows.append(row | {"error": s["error"]})
            continue
        row = job_row(row, s, records(s["job_id"]), sns)
        if job.nodes > 1 and row.get("started"):
            row["aligned"] = aligned(list(expand(row["nodes"])), site_file)
        rows.append(row)
    summary = summarize(mode, rows, samples) | {"complete": not cut, "budget_s": budget_s}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{mode}.jobs.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / f"{mode}.samples.json").write_text(json.dumps(samples) + "\n")
    (out / f"{mode}.summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def p95(values: list[float]) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, math.ceil(0.95 * len(s)) - 1)] if s else 0.0


def summarize(mode: str, rows: list[dict], samples: list[dict]) -> dict:
    """Figures over the jobs that ran (cancelled ones for the time they ran); jobs cancelled
    before they started are counted apart, their waits up to the cancel kept as a bound."""
    ok = [r for r in rows if r.get("started") and r.get("end") is not None]
    never = [r for r in rows if r.get("started") is False and None not in (r["submit"], r["end"])]
    counts = {"mode": mode, "jobs": len(rows), "failed_submit": sum("error" in r for r in rows),
              "started": len(ok), "cancelled": sum("CANCELLED" in r.get("state", "") for r in rows),
              "cancelled_before_start": len(never),
              "wait_before_cancel_mean_s": round(statistics.mean(
                  r["end"] - r["submit"] for r in never), 1) if never else None}  # fmt: skip
    if not ok:
        return counts | {"makespan_s": None, "util_asked_pct": None}
    first = min(r["submit"] for r in ok + never)
    makespan = max(r["end"] for r in ok + never) - first
    gpus_all = 144 * GPUS_PER_NODE
    asked = sum(r["gpus"] * (r["end"] - r["start"]) for r in ok)
    alloc = sum(r["nodes_alloc"] * GPUS_PER_NODE * (r["end"] - r["start"]) for r in ok)
    waits = [r["start"] - r["submit"] for r in ok]
    multi = [r for r in ok if r["nodes_asked"] > 1]
    frag = [s["fragmented"] for s in samples]
    return counts | {
        "makespan_s": makespan,
        "util_asked_pct": round(100 * asked / (gpus_all * makespan), 1),
        "util_alloc_pct": round(100 * alloc / (gpus_all * makespan), 1),
        "wait_mean_s": round(statistics.mean(waits), 1), "wait_p95_s": p95(waits),
        "multi_node_jobs": len(multi),
        "aligned_pct": round(100 * sum(r["aligned"] for r in multi) / len(multi), 1)
        if multi else None,
        "fragmented_mean": round(statistics.mean(frag), 2) if frag else None,
        "fragmented_max": max(frag) if frag else None,
        "load_avg": os.getloadavg(),
        "time_utc": datetime.utcnow().strftime("%Y-%m-%d %H:%M:%S"),
    }  # fmt: skip


def check_aligned_plugin() -> None:
    """lua-aligned needs the plugin exported with small_jobs: aligned: a held -N 3 in main
    must keep 3 nodes (the shipped plugin makes it 16)."""
    probe = ["-H", "-p", "main", "-N", "3", "-t", "1", "--job-name=sched-probe", "-o", "/dev/null"]
    proc = run("sbatch", "--parsable", *probe, stdin="#!/bin/bash\ntrue\n")
    if proc.returncode != 0:
        raise SystemExit(f"bench_sched: probe job refused: {proc.stderr.strip()}")
    job_id = proc.stdout.split(";")[0].strip()
    nodes = (records(int(job_id)) or [{}])[0].get("NumNodes", "?")
    run("scancel", job_id)
    if nodes.split("-")[0] != "3":
        raise SystemExit(
            f"bench_sched: -N 3 in partition main became NumNodes={nodes}: the plugin is not"
            " in small_jobs: aligned mode (sched_run.sh installs it for lua-aligned)"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=MODES, required=True)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--load", type=float, default=1.2, help="offered work / capacity")
    ap.add_argument("--site", help="the cluster's site file (default: the minicluster's)")
    ap.add_argument("--budget", type=float, help="seconds: then cancel what is left (partial)")
    ap.add_argument("--out", default=str(ROOT / "perf" / "results" / "sched"))
    ns = ap.parse_args()
    site = ns.site or str(Path(os.environ["SLURM_CONF"]).parent / "site.yaml")
    jobs = make_mix(ns.jobs, ns.seed, 144, ns.load)
    if ns.mode == "lua-aligned":
        check_aligned_plugin()
    summary = replay(ns.mode, jobs, site, Path(ns.out), ns.budget)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
