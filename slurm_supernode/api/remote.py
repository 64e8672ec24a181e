"""snrun on a named cluster, from Python: the verbs run by the login node's own snrun.

``cluster`` is a name from the user's clusters.yaml (docs/remote.md). A command goes over one
shared SSH connection; the verbs with a JSON answer go through one generic path, ``calls``:
several verbs in one round trip (``statuses`` of 20 jobs is one ssh command).

    from slurm_supernode.api import remote
    job_id = remote.submit("train.py", ["--lr", "3e-4"], options=["-S", "1"], cluster="lab")
    remote.status(job_id, cluster="lab")["state"]
    for line in remote.logs(job_id, cluster="lab", follow=True): print(line)
    remote.cancel(job_id, cluster="lab")
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_supernode.errors import InputError
from slurm_supernode.remote import failures
from slurm_supernode.remote.config import Cluster, find_cluster
from slurm_supernode.remote.protocol import HIDDEN_VERB, NEEDED_VERSION
from slurm_supernode.remote.ssh import Transport

__all__ = [
    "Transport", "VerbResult", "calls", "cancel", "check_cluster", "connect", "fetch", "logs",
    "run", "run_calls", "status", "statuses", "submit",
]  # fmt: skip


@dataclass(frozen=True)
class VerbResult:
    """One verb's outcome on the login node: its exit code and output."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """Its stdout as JSON, or the verb's failure in words."""
        if self.returncode != 0:
            raise failures.remote_failure(
                "", "snrun " + " ".join(self.argv), self.returncode, self.stderr
            )
        return json.loads(self.stdout)


def check_cluster(cluster: object, where: str = "cluster") -> str:
    if not isinstance(cluster, str) or not cluster.strip():
        raise InputError(
            f"{cluster!r} is not a cluster name",
            where=where,
            hint="a name from clusters.yaml (docs/remote.md)",
        )
    return cluster


def connect(cluster: str | Cluster, *, check: bool = True) -> Transport:
    """A transport to ``cluster`` (a name, or a Cluster read from the file), its snrun checked
    (``check``: one ``snrun --version`` per 10 minutes and cluster)."""
    entry = cluster if isinstance(cluster, Cluster) else find_cluster(check_cluster(cluster))
    transport = Transport(entry)
    if check:
        transport.ensure_snrun(NEEDED_VERSION)
    return transport


def run(argv: Sequence[str], *, cluster: str) -> VerbResult:
    """Any snrun verb there (``["status", "12"]``), its output captured."""
    return calls([argv], cluster=cluster)[0]


def calls(argvs: Sequence[Sequence[str]], *, cluster: str) -> list[VerbResult]:
    """Several verbs in one round trip: the login node's snrun runs each in turn."""
    transport = connect(cluster)
    return run_calls(transport, argvs)


def run_calls(transport: Transport, argvs: Sequence[Sequence[str]]) -> list[VerbResult]:
    for argv in argvs:
        if isinstance(argv, str) or not all(isinstance(a, str) for a in argv):
            raise InputError(f"{argv!r} is not a list of words", where="argv")
    request = json.dumps([list(a) for a in argvs]).encode()
    res = transport.call([HIDDEN_VERB, "calls"], stdin=request)
    if res.returncode != 0:
        raise failures.remote_failure(
            transport.cluster.name, "snrun remote calls", res.returncode, res.stderr
        )
    answers = json.loads(res.stdout)
    return [
        VerbResult(tuple(a), int(r["rc"]), str(r["stdout"]), str(r["stderr"]))
        for a, r in zip(argvs, answers, strict=True)
    ]


def status(job: str | int | None = None, *, cluster: str, last: int = 10) -> Any:
    """``snrun status --json`` there: a chain (or a sweep), or the recent chains."""
    argv = ["status", "--json"] + ([str(job)] if job is not None else ["-n", str(last)])
    return _one(run(argv, cluster=cluster), cluster)


def statuses(jobs: Sequence[str | int], *, cluster: str) -> list[Any]:
    """The status of each job, in one round trip."""
    results = calls([["status", "--json", str(j)] for j in jobs], cluster=cluster)
    return [_one(r, cluster) for r in results]


def cancel(job: str | int, *, cluster: str) -> str:
    """``snrun cancel`` there; what it said."""
    res = run(["cancel", str(job)], cluster=cluster)
    if res.returncode != 0:
        raise failures.remote_failure(cluster, f"snrun cancel {job}", res.returncode, res.stderr)
    return res.stdout.strip()


def submit(
    program: str | Path,
    args: Sequence[str] = (),
    *,
    cluster: str,
    options: Sequence[str] = (),
    dry_run: bool = False,
) -> str:
    """Ship ``program``'s folder and submit it there with snrun's ``options`` (the command
    line's); the job id (``dry_run``: the plan as JSON text)."""
    from slurm_supernode.api.remote_code import ship

    check_cluster(cluster)
    script = Path(program)
    if not script.is_file():
        raise InputError(f"script {str(program)!r} does not exist here", where="program")
    transport = connect(cluster)
    shipped = ship(transport, script)
    mode = ["--dry-run", "--json"] if dry_run else ["--parsable"]
    argv = ["submit", *options, *mode, shipped.program, *args]
    res = run_calls(transport, [argv])[0]
    if res.returncode != 0:
        raise failures.remote_failure(cluster, "snrun submit", res.returncode, res.stderr)
    return res.stdout.strip()


def logs(
    job: str | int, *, cluster: str, follow: bool = False, options: Sequence[str] = ()
) -> Iterator[str]:
    """The job's log lines there (``follow``: until its chain ends, reconnecting after a
    dropped connection)."""
    from slurm_supernode.api.remote_logs import follow_lines

    transport = connect(cluster)
    argv = ["logs", str(job), *options, *(["-f"] if follow else [])]
    yield from follow_lines(transport, argv, reconnect=follow)


def fetch(transport: Transport, remote_path: str, local_path: Path) -> Path:
    """A file of the login node copied here (written whole: temp file and rename)."""
    import os
    import tempfile

    res = transport.call(["cat", "--", remote_path], snrun=False)
    if res.returncode != 0:
        raise failures.remote_failure(
            transport.cluster.name, f"cat {remote_path}", res.returncode, res.stderr
        )
    local_path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{local_path.name}.", dir=local_path.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(res.stdout)
    os.replace(tmp, local_path)
    return local_path


def _one(result: VerbResult, cluster: str) -> Any:
    if result.returncode != 0:
        raise failures.remote_failure(
            cluster, "snrun " + " ".join(result.argv), result.returncode, result.stderr
        )
    return json.loads(result.stdout)
