"""The walk-through of docs/api.md, as one program: each step prints what docs/api.md shows.

    SNRUN_SITE=local python contrib/examples/api_walkthrough.py   # needs the local cluster up

It submits two one-super-node jobs (check_ranks.py, then a job that sleeps until cancelled)
and leaves their job directories under ./walkthrough-jobs.
"""

from __future__ import annotations

import time
from pathlib import Path

from slurm_supernode import api

HERE = Path(__file__).resolve().parent
JOBS = Path("walkthrough-jobs").absolute()


def step(title: str) -> None:
    print(f"\n>>> {title}")


def main() -> None:
    step("spec = api.JobSpec(...); plan = api.plan(spec)")
    spec = api.JobSpec(
        program=str(HERE / "check_ranks.py"),
        program_args=("--lr", "3e-4"),
        supernodes=1,
        nproc_per_node=1,
        time="5",
        jobs_dir=str(JOBS),
    )
    plan = api.plan(spec)
    print("plan.sbatch_argv():", " ".join(plan.sbatch_argv()))
    print("plan.job_dir.exists():", plan.job_dir.exists())
    rank_map = plan.rank_map()
    print("world size:", rank_map.world_size, "on", [n.hostname for n in rank_map.nodes])
    print("notices:", list(plan.notices))

    step("job = api.submit(plan); job.wait(timeout=300, progress=print)")
    job = api.submit(plan)
    print(job)
    final = job.wait(timeout=300, progress=print)

    step("job.attempts()")
    for a in job.attempts():
        print(a.attempt, a.job_id, a.nodes, a.exit_code, a.cause)

    step("job.logs(rank=0)")
    for line in list(job.logs(rank=0))[:5]:
        print(line)

    step("api.Job.from_id(job.job_id, jobs_dir=...).state()")
    print(api.Job.from_id(job.job_id, jobs_dir=JOBS).state())

    step("a second job: state(), logs(follow=True), cancel()")
    sleeper = Path("sleeper.py").absolute()
    sleeper.write_text("import time\nprint('started', flush=True)\ntime.sleep(600)\n")
    other = api.submit(api.plan(api.JobSpec(program=str(sleeper), jobs_dir=str(JOBS))))
    while other.state().state != "RUNNING":
        time.sleep(0.5)
    print(other.state())
    for line in other.logs(rank=0, follow=True):  # goes on until the chain ends
        print(line)
        if "started" in line:
            break
    print("cancelled:", other.cancel().job_ids)
    print(other.wait(timeout=60))
    print("final of the first job:", final)
    print(api.Job.from_id(final.job_id, jobs_dir=JOBS).cancel())  # ended: nothing changes


if __name__ == "__main__":
    main()
