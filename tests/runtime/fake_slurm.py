"""Fake `srun`, `scontrol` and `sbatch` for the supervisor's loop tests.

Each call is logged (one JSON line per call in $FAKE_CALLS). What a step does is read from the
scenario ($FAKE_SCENARIO, JSON): ``attempts[SNRUN_ATTEMPT]`` for the agent step, ``health``
for the pre-flight step, ``bad_nodes`` for `scontrol show node`, ``proctrack`` for `scontrol
show config`'s ProctrackType, ``job_state`` for `scontrol show job`, ``requeue_fails`` and
``sbatch_fails`` for the actions. An attempt is a dict:

- ``exits`` {host: code}: node_exit ledger records the agents would write (missing host =
  lost node); ``rc``: srun's exit code; ``heartbeat``: progress marker written first;
- ``raised`` {host: "Type: message"}: rank_failed records (rank 1) of ranks that raised;
- ``config_errors`` {host: error}: node_exit records of agents that stopped on a
  configuration error (exit 2) before torchrun;
- ``linger`` {host: code}: after ``exits``, the step waits (as torchrun's exit barrier does on
  healthy nodes) until the supervisor's fail-fast stop request (``stop/attempt<N>.json``: the
  agents stop, write these node_exit records with ``stopped`` and the step exits with the
  highest code) or a SIGTERM (the records without ``stopped``, exit 143); 98 if nobody ended it
  within ``linger_s`` (30 s). ``deaf``: the agents ignore the stop request (only SIGTERM);
- ``hang``: never ends by itself (until the supervisor's SIGTERM: exits 143);
- ``signal_parent``: "TERM" or "USR2": sends it to the supervisor (as Slurm would to the batch
  step), then waits for the supervisor to forward it; TERM ends the step with 143, USR2 lets it
  finish with ``exits``/``rc``;
- ``cancelled_by_user``: `snrun cancel` marks the chain CANCELLED, then Slurm's SIGTERM comes (as
  ``signal_parent`` TERM), and the step is slow to die: it waits (up to 10 s, as Slurm's KillWait
  would) for the attempt's end in the ledger, writes ``end_seen_before_step_died`` in the job dir
  (true/false) and exits 143.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def _log(argv: list[str], stdin: str | None = None) -> None:
    with open(os.environ["FAKE_CALLS"], "a") as fh:
        fh.write(json.dumps({"argv": argv, "stdin": stdin}) + "\n")


def _scenario() -> dict:
    return json.loads(Path(os.environ["FAKE_SCENARIO"]).read_text())


def srun(args: list[str]) -> int:
    sc = _scenario()
    if "--overlap" in args:  # snrun stacks beside the step: a dump per rank
        out = next(a.split("=", 1)[1] for a in args if a.startswith("--out="))
        Path(out, "rank0.txt").write_text("Thread 1 (idle)\n    main (train.py:7)\n")
        return 0
    if "health" in args:  # pre-flight: one JSON per task under --output
        pattern = next(a.split("=", 1)[1] for a in args if a.startswith("--output="))
        for i, (host, status) in enumerate(sc.get("health", {}).items()):
            Path(pattern.replace("%t", str(i))).write_text(
                json.dumps({"node": host, "status": status})
            )
        return 0
    attempt = int(os.environ["SNRUN_ATTEMPT"])
    step = sc["attempts"][attempt]
    got: list[str] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGUSR2, lambda *_: got.append("USR2"))
    if step.get("heartbeat"):
        Path(os.environ["SNRUN_HEARTBEAT_FILE"]).write_text(step["heartbeat"] + "\n")
    if step.get("cancelled_by_user"):
        return _cancelled_slowly(Path(args[args.index("--job-dir") + 1]), attempt)
    if step.get("signal_parent"):
        os.kill(os.getppid(), getattr(signal, "SIG" + step["signal_parent"]))
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
        if not got:
            return 99  # the supervisor did not forward the signal
    if step.get("hang"):
        while True:
            time.sleep(0.05)
    job_dir = Path(args[args.index("--job-dir") + 1])
    if step.get("cancel_record"):  # `snrun cancel` wrote its final record while the step ran
        from slurm_supernode.chain import ledger

        ledger.append_final(job_dir, state="CANCELLED", reason="snrun cancel")
    _agents_report(job_dir, attempt, step)
    if step.get("linger"):
        return _linger(job_dir, attempt, step)
    return int(step.get("rc", 0))


def _cancelled_slowly(job_dir: Path, attempt: int) -> int:
    from slurm_supernode.chain import ledger

    ledger.append(job_dir, "final", state="CANCELLED", reason="snrun cancel")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # slow to die: Slurm's SIGKILL would end it
    os.kill(os.getppid(), signal.SIGTERM)
    deadline = time.monotonic() + 10
    seen = False
    while not seen and time.monotonic() < deadline:
        time.sleep(0.02)
        seen = any(
            r["event"] == "attempt_end" and r.get("attempt") == attempt
            for r in ledger.read(job_dir)
        )
    (job_dir / "end_seen_before_step_died").write_text(json.dumps(seen))
    return 143


def _agents_report(job_dir: Path, attempt: int, step: dict) -> None:
    """The ledger records the ranks and agents of the step would write."""
    from slurm_supernode.chain import ledger

    for host, error in step.get("raised", {}).items():  # what runtime/rank_entry.py writes
        raised = error if isinstance(error, dict) else {"error": error, "rank": 1}
        ledger.append(job_dir, "rank_failed", attempt=attempt, node=host, **raised)
    for host, code in step.get("exits", {}).items():
        ledger.append(job_dir, "node_exit", attempt=attempt, node=host, exit_code=code)
    for host, said in step.get("container_failed", {}).items():  # the agent's record of it
        ledger.append(
            job_dir, "node_exit", attempt=attempt, node=host, exit_code=127,
            container_failed=True, error=said[-1], output=said,
        )  # fmt: skip
    for host, error in step.get("config_errors", {}).items():
        ledger.append(
            job_dir, "node_exit", attempt=attempt, node=host, exit_code=2, error=error,
            config_error=True,
        )  # fmt: skip


def _linger(job_dir: Path, attempt: int, step: dict) -> int:
    """The other nodes wait (torchrun's exit barrier) until a SIGTERM ends the step."""
    from slurm_supernode.chain import ledger
    from slurm_supernode.runtime.failfast import read_stop

    stopped: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(143))
    deadline = time.monotonic() + step.get("linger_s", 30)
    request = None
    while not stopped and time.monotonic() < deadline:
        request = None if step.get("deaf") else read_stop(job_dir, attempt)
        if request is not None:
            break
        time.sleep(0.02)
    for host, code in step["linger"].items():
        extra = {"stopped": request.reason} if request is not None else {}
        ledger.append(job_dir, "node_exit", attempt=attempt, node=host, exit_code=code, **extra)
    if request is not None:
        return max(step["linger"].values())
    return 143 if stopped else 98  # 98: nobody ended the step


def scontrol(args: list[str]) -> int:
    sc = _scenario()
    if args[:2] == ["show", "node"]:
        from slurm_supernode.hostlist import expand

        for name in expand(args[3]) if len(args) > 3 else []:
            state = "DOWN+NOT_RESPONDING" if name in sc.get("bad_nodes", []) else "ALLOCATED"
            print(f"NodeName={name} State={state} CPUTot=1")
        return 0
    if args[:2] == ["show", "config"]:
        print(f"ProctrackType           = {sc.get('proctrack', 'proctrack/linuxproc')}")
        return 0
    if args[:2] == ["show", "job"]:  # ``job_state``: what the controller says of the job
        job = {"job_id": int(args[-1]), "job_state": [sc.get("job_state", "RUNNING")]}
        print(json.dumps({"jobs": [job]}))
        return 0
    if args[0] in ("requeue", "requeuehold"):
        if sc.get("requeue_fails"):
            print("scontrol: error: Requeue of job is not allowed for this job", file=sys.stderr)
            return 1
        return 0
    return 0


def sbatch(args: list[str]) -> int:
    if _scenario().get("sbatch_fails"):
        print("sbatch: error: Batch job submission failed: Invalid account", file=sys.stderr)
        return 1
    print("1001")
    return 0


def main() -> int:
    name, args = sys.argv[1], sys.argv[2:]
    stdin = sys.stdin.read() if name == "sbatch" else None
    _log([name, *args], stdin)
    return {"srun": srun, "scontrol": scontrol, "sbatch": sbatch}[name](args)


if __name__ == "__main__":
    sys.exit(main())
