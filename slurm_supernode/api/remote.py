"""snrun on a named cluster, from Python: the verbs run by the login node's own snrun.

Every public function checks its arguments at the boundary (api/checked.py: the annotations;
a job reference as ``Job.from_id`` takes one): a wrong one is an ``InputError`` naming the
parameter, before any ssh is run.

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

from slurm_supernode.api.checked import checked
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
    from slurm_supernode.api.arguments import check_text

    if not isinstance(cluster, str) or not cluster.strip():
        raise InputError(
            f"{cluster!r} is not a cluster name",
            where=where,
            hint="a name from clusters.yaml (docs/remote.md)",
        )
    check_text(cluster, where)
    return cluster


def _job(job: object, where: str = "job") -> str:
    """A job id (int > 0 or its text) or a job directory there, as text."""
    from slurm_supernode.api.arguments import check_job_ref

    text = check_job_ref(str(job) if isinstance(job, Path) else job, where)
    if text.startswith("-"):  # the login node's snrun would read it as an option
        raise InputError(f"{where} {text!r} is no job id or directory", where=where)
    return text


@checked
def connect(cluster: str | Cluster, *, check: bool = True) -> Transport:
    """A transport to ``cluster`` (a name, or a Cluster read from the file), its snrun checked
    (``check``: one ``snrun --version`` per 10 minutes and cluster)."""
    entry = cluster if isinstance(cluster, Cluster) else find_cluster(check_cluster(cluster))
    transport = Transport(entry)
    if check:
        transport.ensure_snrun(NEEDED_VERSION)
    return transport


@checked
def run(argv: Sequence[str], *, cluster: str) -> VerbResult:
    """Any snrun verb there (``["status", "12"]``), its output captured."""
    check_cluster(cluster)
    return calls([argv], cluster=cluster)[0]


@checked
def calls(argvs: Sequence[Sequence[str]], *, cluster: str) -> list[VerbResult]:
    """Several verbs in one round trip: the login node's snrun runs each in turn."""
    check_cluster(cluster)
    transport = connect(cluster)
    return run_calls(transport, argvs)


@checked
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


@checked
def status(job: str | int | None = None, *, cluster: str, last: int = 10) -> Any:
    """``snrun status --json`` there: a chain (or a sweep), or the recent chains (``last``
    of them)."""
    from slurm_supernode.api.arguments import check_count

    check_cluster(cluster)
    job = None if job is None else _job(job)
    check_count(last, 1, 10_000, "last")
    argv = ["status", "--json"] + ([str(job)] if job is not None else ["-n", str(last)])
    return _one(run(argv, cluster=cluster), cluster)


@checked
def statuses(jobs: Sequence[str | int], *, cluster: str) -> list[Any]:
    """The status of each job, in one round trip."""
    check_cluster(cluster)
    jobs = [_job(j, f"jobs[{i}]") for i, j in enumerate(jobs)]
    results = calls([["status", "--json", str(j)] for j in jobs], cluster=cluster)
    return [_one(r, cluster) for r in results]


@checked
def cancel(job: str | int, *, cluster: str) -> str:
    """``snrun cancel`` there; what it said."""
    check_cluster(cluster)
    job = _job(job)
    res = run(["cancel", str(job)], cluster=cluster)
    if res.returncode != 0:
        raise failures.remote_failure(cluster, f"snrun cancel {job}", res.returncode, res.stderr)
    return res.stdout.strip()


@checked
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
    from slurm_supernode.api.arguments import check_text
    from slurm_supernode.api.remote_code import ship

    check_cluster(cluster)
    check_text(str(program), "program")
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


@checked
def logs(
    job: str | int, *, cluster: str, follow: bool = False, options: Sequence[str] = ()
) -> Iterator[str]:
    """The job's log lines there (``follow``: until its chain ends, reconnecting after a
    dropped connection)."""
    from slurm_supernode.api.remote_logs import follow_lines

    check_cluster(cluster)
    job = _job(job)  # checked here, not when the first line is asked for

    def lines() -> Iterator[str]:
        transport = connect(cluster)
        argv = ["logs", str(job), *options, *(["-f"] if follow else [])]
        yield from follow_lines(transport, argv, reconnect=follow)

    return lines()


@checked
def fetch(transport: Transport, remote_path: str, local_path: str | Path) -> Path:
    """A file of the login node copied here (written whole: temp file and rename)."""
    import os
    import tempfile

    if not remote_path.strip():
        raise InputError("remote_path is empty", where="remote_path", hint="a file there")
    local_path = Path(local_path)

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
