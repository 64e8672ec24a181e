"""Issue 23 benchmark on the local cluster: one rank crashes -> the next attempt's first step.

The last rank raises after the last step, when every other rank has finished its work: the
healthy nodes' torchrun would wait in torchelastic's exit barrier (300 s) for the failed one;
snrun's supervisor asks every other node's agent to stop (fail fast, the default) as soon as
the failing rank records its exception, and restarts in the allocation. Per run (epoch seconds
from the ledger, the agents' launch records and the job log):

  crash -> stop requested   the rank's exception -> the supervisor's stop request
  crash -> last node_exit   -> the last agent's record of its node's end (every node recorded)
  crash -> step ended       -> the attempt's end (the srun step ended by itself)
  crash -> next start       -> the next attempt's step starts (attempt_start)
  crash -> agents ready     -> the last agent of the next attempt is about to start torchrun
  crash -> first step       -> the next attempt's first heartbeat (its first training step)

`--nodes 2` (`-N 2 --allow-partial`) and `--nodes 8` (`-S 2`), one rank per node. `--burn N`
keeps N CPU burners (busy loops) running for the whole measurement, to measure under load.
Needs a running minicluster (`make cluster-up`, or `contrib/minicluster/minicluster up
--slurm 24.11`, with SLURM_CONF and, for a namespaced one, its clients on PATH).

    python3 perf/bench_failfast.py --nodes 2 --nodes 8 --repeat 3 [--burn 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = str(ROOT / "contrib" / "examples" / "train_resumable.py")
ENV = os.environ | {"PYTHONPATH": str(ROOT)}


def burn() -> None:
    while True:
        pass


def ledger(job_dir: Path) -> list[dict]:
    p = job_dir / "ledger.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []


def submit(jobs: Path, nodes: int, steps: int) -> Path:
    shape = ["-N", "2", "--allow-partial"] if nodes == 2 else ["-S", str(nodes // 4)]
    last = nodes - 1  # the last rank: not on the node that hosts the rendezvous store
    out = subprocess.run(
        [
            sys.executable, "-m", "slurm_supernode", "--site", "local", "--jobs-dir", str(jobs),
            "--parsable", *shape, "--nproc-per-node", "1", TRAIN, "--steps", str(steps),
            "--step-time", "0.5", "--fail-attempt", "0", "--fail-rank", str(last),
            "--fail-step", str(steps), "--fail-mode", "raise",
        ],
        env=ENV, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return (jobs / "by-id" / out.stdout.strip().splitlines()[-1]).resolve()


def first_step_of(job_dir: Path, attempt: int) -> float | None:
    """When the attempt's first heartbeat was written: mtime of "step N / attempt A" (or of
    "done step N / attempt A" if the attempt finished between two looks)."""
    hb = job_dir / "heartbeat"
    try:
        words = hb.read_text().split()
        words = words[1:] if words[:1] == ["done"] else words
        if len(words) >= 4 and words[0] == "step" and int(words[3]) >= attempt:
            return hb.stat().st_mtime
    except (OSError, ValueError):
        pass
    return None


def one_run(jobs: Path, nodes: int, timeout: float) -> dict:
    d = submit(jobs, nodes, steps=4)
    deadline = time.time() + timeout
    first = None
    while time.time() < deadline and first is None:
        first = first_step_of(d, 1)
        if first is None and any(r["event"] == "final" for r in ledger(d)):
            break  # the chain ended without a next attempt's step
        time.sleep(0.02)
    while time.time() < deadline and not any(r["event"] == "final" for r in ledger(d)):
        time.sleep(0.2)
    recs = ledger(d)
    log = "".join(p.read_text(errors="replace") for p in (d / "logs").glob("*.out"))
    crash = [float(t) for t in re.findall(r"injected failure at step \d+ \(t=([\d.]+)\)", log)]
    ends = [r for r in recs if r["event"] == "attempt_end"]
    starts = [r for r in recs if r["event"] == "attempt_start"]
    exits = [r for r in recs if r["event"] == "node_exit" and r.get("attempt") == 0]
    if not crash or not ends or len(starts) < 2 or first is None:
        return {"nodes": nodes, "error": f"incomplete run: {d}", "ledger": recs[-6:]}
    t0 = crash[0]
    stop = [r["time"] for r in recs if r["event"] == "stop_requested" and r.get("attempt") == 0]
    ready = [p.stat().st_mtime for p in (d / "env").glob("*.1.json")]
    return {
        "nodes": nodes,
        "job_dir": str(d),
        "crash_to_stop_request": round(stop[0] - t0, 2) if stop else None,
        "crash_to_last_node_exit": round(max(r["time"] for r in exits) - t0, 2) if exits else None,
        "stopped_nodes": sum(1 for r in exits if r.get("stopped")),
        "crash_to_step_end": round(ends[0]["time"] - t0, 2),
        "crash_to_agents_ready": round(max(ready) - t0, 2) if ready else None,
        "crash_to_next_start": round(starts[1]["time"] - t0, 2),
        "crash_to_first_step": round(first - t0, 2),
        "cause": ends[0]["cause"],
        "detail": ends[0]["detail"],
        "node_exits": [(r["node"], r["exit_code"], round(r["time"] - t0, 2)) for r in exits],
        "step_exit": ends[0]["exit_code"],
        "final": next((r["state"] for r in recs if r["event"] == "final"), None),
    }


def span(runs: list[dict], key: str) -> str:
    values = [r[key] for r in runs if r.get(key) is not None]
    return f"{min(values):.1f}-{max(values):.1f}" if values else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, action="append", choices=(2, 4, 8))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--burn", type=int, default=0, help="CPU burners during the runs")
    ap.add_argument("--timeout", type=float, default=400)
    ap.add_argument("--json", help="write the raw results here")
    ns = ap.parse_args()
    version = subprocess.run(["sinfo", "--version"], capture_output=True, text=True, env=ENV)
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(ns.burn)]
    for b in burners:
        b.start()
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-failfast-") as tmp:
            for nodes in ns.nodes or [2, 8]:
                for i in range(ns.repeat):
                    load = os.getloadavg()[0]
                    r = one_run(Path(tmp) / f"jobs{nodes}-{i}", nodes, ns.timeout)
                    after = os.getloadavg()[0]
                    r |= {"load1_before": round(load, 2), "load1_after": round(after, 2)}
                    results.append(r)
                    print(json.dumps(r), flush=True)
    finally:
        for b in burners:
            b.terminate()
    summary = {
        "slurm": version.stdout.strip(),
        "burners": ns.burn,
        "cpus": os.cpu_count(),
        "runs": results,
    }
    if ns.json:
        Path(ns.json).write_text(json.dumps(summary, indent=1) + "\n")
    for nodes in sorted({r["nodes"] for r in results}):
        ok = [r for r in results if r["nodes"] == nodes and "error" not in r]
        if ok:
            print(
                f"{version.stdout.strip()} {nodes} nodes, {ns.burn} burners: crash -> stop "
                f"request {span(ok, 'crash_to_stop_request')} s, -> every node_exit "
                f"{span(ok, 'crash_to_last_node_exit')} s, -> step end "
                f"{span(ok, 'crash_to_step_end')} s, -> next start "
                f"{span(ok, 'crash_to_next_start')} s, -> agents ready "
                f"{span(ok, 'crash_to_agents_ready')} s, -> first step "
                f"{span(ok, 'crash_to_first_step')} s ({len(ok)} runs)"
            )
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
