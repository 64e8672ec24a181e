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

With ``--span S`` (`make bench-sched`'s default) the jobs keep arriving for S seconds at
``--load`` times the cluster's capacity (the queue stays full, as on a busy site), each with the
time limit its user typed (sched_mix.py: a few times its run time, whole hours), so Slurm's
backfill plans with the usual overestimates; the busy-cluster figures (sched_figures.py:
throughput over a window without the ramp-up and the drain, wait p50/p95/p99 per size class,
bounded slowdown) and the scheduler's parameters as `scontrol show config` gives them go into
the summary, and each 2 s sample counts the pending jobs and the trays they ask for.

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

import sched_figures  # noqa: E402
from sched_mix import GPUS_PER_NODE, Job, make_mix, make_stream  # noqa: E402

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


def time_limit(job: Job) -> str:
    """Slurm minutes: the user's limit of the mix, or (a job without one) run time + 2 min."""
    return str(job.limit_min or math.ceil(job.duration_s / 60) + 2)


def sbatch_args(job: Job, mode: str) -> list[str]:
    """The request a user of ``mode`` types for ``job`` (lua: before the plugin)."""
    n = job.nodes
    limit = time_limit(job)
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
    spec = JobSpec(program="x", supernodes=k, time=time_limit(job), job_name=f"sched-{job.index}")
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


def pending() -> tuple[int, int]:
    """Pending jobs and the trays they ask for (queue depth)."""
    counts = run("squeue", "-h", "-t", "PD", "-o", "%D").stdout.split()
    return len(counts), sum(int(c) for c in counts if c.isdigit())


def sample(sns: dict[str, list[str]], t0: float) -> dict:
    busy = set(running_nodes())
    frag = 0
    for nodes in sns.values():
        used = sum(n in busy for n in nodes)
        idle = len(nodes) - used
        if used and 0 < idle < USED:
            frag += 1  # busy trays and idle ones, too few idle for a whole-super-node job
    jobs, trays = pending()
    return {"t": round(time.monotonic() - t0, 1), "busy_nodes": len(busy), "fragmented": frag,
            "pending": jobs, "pending_trays": trays}  # fmt: skip


TIME_RE = re.compile(r"(\w+)=(\S+)")


def records(job_id: int) -> list[dict[str, str]]:
    """Every component of the job as scontrol shows it (one line each with -o)."""
    out = run("scontrol", "-o", "show", "job", str(job_id)).stdout
    return [dict(TIME_RE.findall(line)) for line in out.splitlines() if line.strip()]


def all_records() -> dict[int, list[dict[str, str]]]:
    """Every job slurmctld still holds, by job id (a heterogeneous job's components under its
    leader's id, the id sbatch printed), in one call."""
    out: dict[int, list[dict[str, str]]] = {}
    for line in run("scontrol", "-o", "show", "job", timeout=300).stdout.splitlines():
        rec = dict(TIME_RE.findall(line))
        if "JobId" in rec:
            out.setdefault(int(rec.get("HetJobId", rec["JobId"])), []).append(rec)
    return out


def scheduler_config() -> dict[str, str]:
    """The scheduler's parameters of the running cluster (`scontrol show config`)."""
    keys = ("SLURM_VERSION", "SchedulerType", "SchedulerParameters", "SelectType",
            "SelectTypeParameters", "PriorityType", "TopologyPlugin", "MinJobAge")  # fmt: skip
    conf = {}
    for line in run("scontrol", "show", "config").stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in keys:
            conf[key.strip()] = value.strip()
    return conf


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


def aligned(hosts: list[str], site) -> bool:
    """TP (4 GPUs) and EP (min(nodes, 16) trays) groups as `snrun plan` forms them (its rank
    map, in-process: a process per job took minutes for a full queue's jobs) inside super
    nodes: no group crosses a super-node boundary ("inter" spans)."""
    from slurm_supernode.placement.model import Layout
    from slurm_supernode.placement.rankmap import build_rank_map

    layout = Layout(tp=GPUS_PER_NODE, ep=min(len(hosts), USED))
    rm = build_rank_map(site, hosts, layout, GPUS_PER_NODE)
    return all(rm.spans.get(g, {}).get("inter", 0) == 0 for g in ("tp", "ep"))


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
    names = {f"sched-{j.index}" for j in jobs}
    cut = False
    while names & set(run("squeue", "-h", "-o", "%j").stdout.split()):
        if deadline is not None and time.monotonic() >= deadline and not cut:
            cancel(subs)  # the budget's cut: what is left ends as CANCELLED
            cut = True
        time.sleep(2)
    return cut


def replay(
    mode: str,
    jobs: list[Job],
    site_file: str,
    out: Path,
    budget_s: float | None = None,
    warmup_s: float = 30.0,
    meta: dict | None = None,
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
    from slurm_supernode.site.loader import load_site

    site = load_site(site_file)
    rows = []
    by_index = {j.index: j for j in jobs}
    held = all_records()
    for s in subs:
        job = by_index[s["index"]]
        row = {"index": job.index, "gpus": job.gpus, "nodes_asked": job.nodes,
               "duration_s": job.duration_s, "offset_s": job.submit_s,
               "limit_min": job.limit_min}  # fmt: skip
        if "error" in s:
            rows.append(row | {"error": s["error"]})
            continue
        row = job_row(row, s, held.get(s["job_id"]) or records(s["job_id"]), sns)
        if job.nodes > 1 and row.get("started"):
            row["aligned"] = aligned(list(expand(row["nodes"])), site)
        rows.append(row)
    summary = summarize(mode, rows, samples) | {"complete": not cut, "budget_s": budget_s}
    summary |= busy_figures(rows, warmup_s) | {"scheduler": scheduler_config()} | (meta or {})
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


def busy_figures(rows: list[dict], warmup_s: float) -> dict:
    """Throughput, waits per size class and bounded slowdown over the window from the first
    submission + warmup to the last (sched_figures.py); the offered load over it."""
    win = sched_figures.window(rows, warmup_s)
    if win is None:
        return {"window": None}
    w0, w1 = win
    offered = sum(r["nodes_asked"] * r["duration_s"] for r in rows
                  if r.get("submit") is not None and w0 <= r["submit"] <= w1)  # fmt: skip
    return {
        "window": [0, round(w1 - w0, 1)],
        "window_from_first_submit_s": [warmup_s, round(w1 - w0 + warmup_s, 1)],
        "offered_load": round(offered / (144 * (w1 - w0)), 2),
        "aligned_in_window_pct": _aligned_in(rows, w0, w1),
        **sched_figures.throughput(rows, w0, w1, GPUS_PER_NODE),
        "waits": sched_figures.wait_table(sched_figures.waits(rows, w0, w1)),
    }


def _aligned_in(rows: list[dict], w0: float, w1: float) -> float | None:
    """Share of the multi-tray jobs that started inside the window whose groups are aligned."""
    multi = [r for r in rows if "aligned" in r and w0 <= r["start"] <= w1]
    return round(100 * sum(r["aligned"] for r in multi) / len(multi), 1) if multi else None


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
    ap.add_argument("--span", type=float, help="seconds of arrivals at --load; else --jobs jobs")
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds left out at the start")
    ap.add_argument("--out", default=str(ROOT / "perf" / "results" / "sched"))
    ns = ap.parse_args()
    site = ns.site or str(Path(os.environ["SLURM_CONF"]).parent / "site.yaml")
    if ns.span is not None:
        jobs = make_stream(ns.seed, 144, ns.load, ns.span)
    else:
        jobs = make_mix(ns.jobs, ns.seed, 144, ns.load)
    if ns.mode == "lua-aligned":
        check_aligned_plugin()
    meta = {"seed": ns.seed, "load": ns.load, "span_s": ns.span}
    summary = replay(ns.mode, jobs, site, Path(ns.out), ns.budget, ns.warmup, meta)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
