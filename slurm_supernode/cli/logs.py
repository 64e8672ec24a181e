"""`snrun logs JOB`: the per-rank logs of a job's attempts, rank-prefixed when merged."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_job_argument, add_jobs_dir_arguments, job_dir_of


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Show the per-rank logs of an snrun job (kept per attempt in the job directory, across "
        "restarts, requeues and resubmissions). Default: every rank of the newest attempt."
    )
    add_job_argument(p)
    p.add_argument("--attempt", type=int, help="attempt number (default: the newest)")
    p.add_argument("--node", help="only the ranks of this node")
    p.add_argument("--rank", type=int, action="append", help="only this rank (repeatable)")
    p.add_argument("--stream", choices=("both", "stdout", "stderr"), default="both")
    p.add_argument("--tail", type=int, metavar="N", help="the last N lines of each rank")
    p.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new lines (and attempts)"
    )
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    import sys

    from slurm_supernode.errors import InputError
    from slurm_supernode.forensics.logs import attempts_with_logs, merged, rank_logs

    if ns.tail is not None and ns.tail < 0:
        raise InputError("--tail must be >= 0", where="--tail")
    job_dir = job_dir_of(ns)
    streams = ("stdout", "stderr") if ns.stream == "both" else (ns.stream,)
    known = attempts_with_logs(job_dir)
    if ns.attempt is not None and ns.attempt not in known:
        raise InputError(
            f"attempt {ns.attempt} has no logs in {job_dir}",
            where="--attempt",
            hint="attempts with logs: " + (", ".join(map(str, known)) or "none yet"),
        )
    if ns.follow:
        return follow(job_dir, ns, streams)
    if not known:
        print(f"snrun: no rank logs yet in {job_dir}", file=sys.stderr)
        return 0
    attempt = known[-1] if ns.attempt is None else ns.attempt
    logs = _select(rank_logs(job_dir, attempt), ns)
    for line in merged(logs, streams, ns.tail):
        print(line)
    return 0


def _select(logs, ns):  # type: ignore[no-untyped-def]
    from slurm_supernode.errors import InputError

    picked = [
        r for r in logs if (not ns.node or r.node == ns.node) and (not ns.rank or r.rank in ns.rank)
    ]
    if logs and not picked and (ns.node or ns.rank):
        what = "--rank" if ns.rank else "--node"
        have = sorted({str(r.rank) if ns.rank else r.node for r in logs})
        raise InputError(
            "no such rank/node in this attempt", where=what, hint="have: " + ", ".join(have)
        )
    return picked


def follow(job_dir, ns, streams) -> int:  # type: ignore[no-untyped-def]
    """Print new lines as they come; without --attempt, move on to each new attempt. Ends when
    the chain has a final state and nothing more was written (or on Ctrl-C)."""
    import time

    from slurm_supernode.forensics.logs import attempts_with_logs, rank_logs
    from slurm_supernode.runtime import ledger

    offsets: dict[str, int] = {}
    attempt = ns.attempt
    idle = 0
    while True:
        known = attempts_with_logs(job_dir)
        if ns.attempt is None and known and known[-1] != attempt:
            attempt = known[-1]
            print(f"== attempt {attempt} ==", flush=True)
        wrote = False
        if attempt is not None:
            for r in _select(rank_logs(job_dir, attempt), ns):
                for stream in streams:
                    path = getattr(r, stream)
                    wrote |= _print_new(
                        path, f"[{r.label}{'' if stream == 'stdout' else ' err'}]", offsets, ns.tail
                    )
        final = ledger.fold(ledger.read(job_dir)).final
        idle = 0 if wrote else idle + 1
        if final and idle >= 2:
            return 0
        time.sleep(0.5)


def _print_new(path, prefix: str, offsets: dict[str, int], tail: int | None) -> bool:  # type: ignore[no-untyped-def]
    key = str(path)
    try:
        size = path.stat().st_size
    except OSError:
        return False
    start = offsets.get(key)
    if start is None:  # first sight: honour --tail
        text = path.read_text(errors="replace")
        complete = text[: text.rfind("\n") + 1]
        lines = complete.splitlines()
        for line in lines[-tail:] if tail else lines:
            print(f"{prefix} {line}", flush=True)
        offsets[key] = len(complete.encode(errors="replace"))
        return bool(lines)
    if size <= start:
        return False
    with open(path, "rb") as fh:
        fh.seek(start)
        chunk = fh.read(size - start)
    end = chunk.rfind(b"\n") + 1
    for line in chunk[:end].decode(errors="replace").splitlines():
        print(f"{prefix} {line}", flush=True)
    offsets[key] = start + end
    return end > 0
