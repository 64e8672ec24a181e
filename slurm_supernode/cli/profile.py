"""`snrun profile JOB [--steps N]`: ask a running job for a profiler window now."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_job_argument, add_jobs_dir_arguments, int_range


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Ask a running snrun job to profile a window of steps now: every rank runs torch's "
        "profiler over the same N optimizer steps (once per request; ranks look for the request "
        "every few seconds, so the window starts at a step each reaches after its look), keeps "
        "the trace for Perfetto/TensorBoard and writes its communication share, which "
        "`snrun metrics JOB` shows beside the plan."
    )
    add_job_argument(p)
    p.add_argument(
        "--steps", type=int_range(1, 1000), metavar="N", help="steps in the window (default 3)"
    )
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.api.profile_request import request_profile

    req = request_profile(ns.job, steps=ns.steps, jobs_dir=ns.jobs_dir, site=ns.site)
    steps = (
        f"the next {req.steps} steps of every rank"
        if req.after_step is None
        else f"steps {req.after_step + 1}-{req.after_step + req.steps} of every rank"
    )
    print(f"profile requested: attempt {req.attempt}, {steps} ({req.path})")
    print(f"traces: {req.traces_dir}/rank-<r>.w<k>.pt.trace.json (Perfetto, TensorBoard)")
    print(f"figures: snrun metrics {ns.job} (communication share, once the window closed)")
    return 0
