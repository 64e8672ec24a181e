"""The job mix of the scheduling-cost benchmark (bench_sched.py): sizes, durations, arrivals.

Source: the Helios traces of SenseTime (Hu et al., "Characterization and Prediction of Deep
Learning Workloads in Large-Scale GPU Datacenters", SC '21), per-cluster summary published by
the authors in github.com/S-Lab-System-Group/HeliosArtifact, file
`analysis/1_compare with Philly trace/helios_cluster_summary.csv` (commit 6345d9f), row
`Venus` (125,303 GPU jobs): GPUs per GPU job median 1, mean 6.736; run time of GPU jobs median
204 s, mean 13,040.6 s. The trace itself (cluster_log.csv, 343 MB) is not used: the mix is a
two-moment fit to those published figures, so it has their median and mean, not their shape.

- Sizes: powers of two GPUs (what DL jobs ask for), P(1 GPU) = 0.5 (the median), the rest
  geometric over 2, 4, ..., 512 with the ratio that gives mean 6.736 GPUs; capped at the
  cluster's 512 used GPUs (128 trays x 4).
- Durations: log-normal with median 204 s and mean 13,040.6 s (sigma = sqrt(2 ln(mean/median))
  = 2.88), then scaled: one trace minute is one replay second, clipped to [MIN_S, MAX_S].
- Arrivals: bursts (users submit sweeps): burst gaps exponential, burst sizes geometric, so
  the queue fills in waves instead of a smooth Poisson stream. ``make_stream`` keeps them
  coming for a fixed span at ``load`` times the cluster's capacity (load > 1: the queue stays
  full, as on a busy site); ``make_mix`` spreads a fixed number of jobs (the first benchmark).
- Time limits: what a user types, not the run time: ``LIMIT_FACTOR`` (2-5) times the run time,
  rounded up to the whole hours users ask for (USER_HOURS). One trace hour is one replay minute,
  so the limits are whole Slurm minutes (Slurm keeps limits in minutes) and backfill has the
  usual overestimates to plan with.
Pure and seeded: the same seed gives the same mix in every mode.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

MEDIAN_GPUS, MEAN_GPUS = 1, 6.736
MEDIAN_RUN_S, MEAN_RUN_S = 204.0, 13040.6
TIME_SCALE = 60.0  # trace seconds per replay second
MIN_S, MAX_S = 4.0, 90.0
GPUS_PER_NODE = 4
LIMIT_FACTOR = (2.0, 5.0)  # user limit / run time, uniform: the usual overestimate
USER_HOURS = (1, 2, 4, 8, 12, 24, 48)  # limits users type (trace hours = replay minutes)


@dataclass(frozen=True)
class Job:
    index: int
    submit_s: float  # replay seconds after the start
    gpus: int
    duration_s: float  # replay seconds
    limit_min: int = 0  # the job's time limit (replay minutes = trace hours); 0: none given

    @property
    def nodes(self) -> int:
        return max(1, math.ceil(self.gpus / GPUS_PER_NODE))


def size_weights(max_gpus: int) -> dict[int, float]:
    """P(gpus) over powers of two: 0.5 at 1, geometric above, mean = MEAN_GPUS (bisection)."""
    sizes = [2**i for i in range(1, int(math.log2(max_gpus)) + 1)]

    def mean_of(r: float) -> float:
        w = [r**i for i in range(len(sizes))]
        return 0.5 * MEDIAN_GPUS + 0.5 * sum(s * x for s, x in zip(sizes, w, strict=True)) / sum(w)

    lo, hi = 0.01, 0.99
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mean_of(mid) < MEAN_GPUS else (lo, mid)
    w = [lo**i for i in range(len(sizes))]
    total = sum(w)
    return {1: 0.5} | {s: 0.5 * x / total for s, x in zip(sizes, w, strict=True)}


def duration_s(rng: random.Random) -> float:
    sigma = math.sqrt(2 * math.log(MEAN_RUN_S / MEDIAN_RUN_S))
    trace = MEDIAN_RUN_S * math.exp(rng.gauss(0.0, sigma))
    return round(min(MAX_S, max(MIN_S, trace / TIME_SCALE)), 1)


def user_limit_min(duration: float, factor: float) -> int:
    """The limit a user types for a run of ``duration`` replay seconds: ``factor`` times it,
    rounded up to the next whole-hour limit of USER_HOURS (replay minutes)."""
    want = factor * duration * TIME_SCALE / 3600  # trace hours
    return next((h for h in USER_HOURS if h >= want), USER_HOURS[-1])


def shape(rng: random.Random, sizes: list[int], probs: list[float]) -> tuple[int, float, int]:
    """GPUs, run time and time limit of one job."""
    gpus, dur = rng.choices(sizes, probs)[0], duration_s(rng)
    return gpus, dur, user_limit_min(dur, rng.uniform(*LIMIT_FACTOR))


def make_stream(
    seed: int, nodes: int, load: float, span_s: float, max_gpus: int = 512
) -> list[Job]:
    """Jobs arriving in bursts for ``span_s`` seconds at ``load`` times what ``nodes`` nodes
    can run (node-seconds offered per second, the mean taken over 20,000 draws of the mix)."""
    weights = size_weights(max_gpus)
    sizes, probs = list(weights), list(weights.values())
    est = random.Random(f"{seed}-mean")
    draws = [shape(est, sizes, probs) for _ in range(20000)]
    mean_work = sum(max(1, math.ceil(g / GPUS_PER_NODE)) * d for g, d, _ in draws) / len(draws)
    mean_burst = 5.0
    gap = mean_burst * mean_work / (nodes * load)
    rng = random.Random(seed)
    jobs: list[Job] = []
    t = 0.0
    while t < span_s:
        for _ in range(1 + int(rng.expovariate(1 / (mean_burst - 1)))):
            gpus, dur, limit = shape(rng, sizes, probs)
            jobs.append(Job(len(jobs), round(t, 1), gpus, dur, limit))
        t += rng.expovariate(1 / gap)
    return jobs


def make_mix(n_jobs: int, seed: int, nodes: int, load: float, max_gpus: int = 512) -> list[Job]:
    """``n_jobs`` jobs arriving in bursts; the arrival span is chosen so that the offered work
    (node-seconds asked) is ``load`` times what ``nodes`` nodes give over that span."""
    rng = random.Random(seed)
    weights = size_weights(max_gpus)
    sizes, probs = list(weights), list(weights.values())
    shapes = [(rng.choices(sizes, probs)[0], duration_s(rng)) for _ in range(n_jobs)]
    work = sum(max(1, math.ceil(g / GPUS_PER_NODE)) * d for g, d in shapes)
    span_s = work / (nodes * load)
    mean_burst = 5.0
    gap = span_s / (n_jobs / mean_burst)
    jobs: list[Job] = []
    t = 0.0
    while len(jobs) < n_jobs:
        burst = 1 + int(rng.expovariate(1 / (mean_burst - 1)))
        for _ in range(min(burst, n_jobs - len(jobs))):
            gpus, dur = shapes[len(jobs)]
            jobs.append(Job(len(jobs), round(t, 1), gpus, dur))
        t += rng.expovariate(1 / gap)
    return jobs
