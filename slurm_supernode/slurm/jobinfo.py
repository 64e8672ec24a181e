"""A job's record (``JobInfo``) and how each Slurm answer becomes one: ``scontrol show job``
(``--json`` where Slurm has it, ``-o`` text on 22.05), ``sacct --json`` and ``sacct -P`` text.
Pure parsers: slurm/job_lookup.py runs the commands."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slurm_supernode.errors import SlurmError, SlurmErrorKind
from slurm_supernode.slurm.parse import (
    json_exit_code,
    json_number,
    json_time,
    null,
    parse_exit_code,
    parse_time,
    to_int,
)
from slurm_supernode.slurm.reasons import job_reason
from slurm_supernode.slurm.state import JobState

SACCT_FIELDS = [
    "jobid",
    "jobname",
    "state",
    "exitcode",
    "derivedexitcode",
    "nodelist",
    "nnodes",
    "partition",
    "start",
    "end",
    "workdir",
]


@dataclass(frozen=True)
class JobInfo:
    """What Slurm says about one job.

    `state` is Slurm's base state and flags (`JobState`: `str()` gives `COMPLETED+COMPLETING`).
    `nodelist` is None while the job is COMPLETING: Slurm then lists only the nodes whose
    epilogs still run, not the job's allocation (ask again once it has ended).
    `exit_code`/`exit_signal` come from the batch script's `ExitCode=3:0`, `derived_exit_code`
    is the highest step exit code (None while unknown: scontrol on 22.05 does not print it;
    the completion log has it).
    `restart_count` and `stdout` are None when the record came from sacct (it does not keep
    them); `source` says where the record came from: "scontrol", "sacct-c" (completion log),
    "sacct-json" (accounting, `sacct --json`) or "sacct" (accounting, text form).
    """

    job_id: int
    name: str
    state: JobState
    reason: str | None
    exit_code: int
    exit_signal: int
    derived_exit_code: int | None
    nodelist: str | None
    num_nodes: int
    restart_count: int | None  # also from `sacct --json` (accounting keeps it)
    partition: str | None
    start_time: datetime | None
    end_time: datetime | None
    work_dir: str | None
    stdout: str | None
    source: str
    # a heterogeneous job's components are records of their own: the leader's id on each
    # (the leader's own record too), None for an ordinary job
    het_job_id: int | None = None

    @property
    def het_component(self) -> bool:
        """A component of a heterogeneous job other than its leader (listed under it)."""
        return self.het_job_id is not None and self.het_job_id != self.job_id

    @property
    def ended(self) -> bool:
        """Over (final base state, no longer COMPLETING): it will not run again unless
        someone requeues it."""
        return self.state.ended

    @property
    def pending(self) -> bool:
        return self.state.pending

    @property
    def running(self) -> bool:
        return self.state.running


def allocation_nodes(state: JobState, nodelist: str | None) -> str | None:
    """The node list a record gives for the job's allocation: none while COMPLETING (then
    Slurm lists only the nodes still completing), none for sacct's "None assigned"."""
    if state.completing or nodelist in (None, "None assigned"):
        return None
    return nodelist


def job_from_record(rec: dict[str, str]) -> JobInfo:
    """A parsed `scontrol show job -o` record -> JobInfo."""
    code, sig = parse_exit_code(rec.get("ExitCode"))
    derived = parse_exit_code(rec["DerivedExitCode"])[0] if "DerivedExitCode" in rec else None
    state = JobState.from_text(rec.get("JobState"))
    return JobInfo(
        job_id=int(rec["JobId"]),
        name=rec.get("JobName", ""),
        state=state,
        reason=job_reason(null(rec.get("Reason")), sig),
        exit_code=code,
        exit_signal=sig,
        derived_exit_code=derived,
        nodelist=allocation_nodes(state, null(rec.get("NodeList"))),
        num_nodes=to_int(rec.get("NumNodes")),
        restart_count=to_int(rec.get("Restarts")),
        partition=null(rec.get("Partition")),
        start_time=parse_time(rec.get("StartTime")),
        end_time=parse_time(rec.get("EndTime")),
        work_dir=null(rec.get("WorkDir")),
        stdout=null(rec.get("StdOut")),
        source="scontrol",
        het_job_id=to_int(rec.get("HetJobId")) or None,
    )


def _json_text(job: Mapping[str, object], key: str) -> str | None:
    value = job.get(key)
    return null(value) if isinstance(value, str) else None


def _from_json(
    job: Mapping[str, object],
    *,
    state: object,
    reason: str | None,
    node_count: str,
    times: Mapping[str, object],
    work_dir: str | None,
    stdout: str | None,
    source: str,
    het_job_id: int | None = None,
) -> JobInfo:
    """The fields `scontrol show job --json` and `sacct --json` name alike (id, name, exit
    codes, restarts, nodes, partition), read one way; the caller passes those they name
    differently (where the state, reason, node count, times, folders are)."""
    code, sig = json_exit_code(job.get("exit_code"))
    derived = job.get("derived_exit_code")
    restarts = job.get("restart_cnt")
    job_state = JobState.from_json(state)
    return JobInfo(
        job_id=json_number(job.get("job_id")) or 0,
        name=_json_text(job, "name") or "",
        state=job_state,
        reason=job_reason(reason, sig),
        exit_code=code,
        exit_signal=sig,
        derived_exit_code=json_exit_code(derived)[0] if isinstance(derived, dict) else None,
        nodelist=allocation_nodes(job_state, _json_text(job, "nodes")),
        num_nodes=json_number(job.get(node_count)) or 0,
        restart_count=json_number(restarts) if restarts is not None else None,
        partition=_json_text(job, "partition"),
        start_time=json_time(times.get("start")),
        end_time=json_time(times.get("end")),
        work_dir=work_dir,
        stdout=stdout,
        source=source,
        het_job_id=het_job_id,
    )


def job_from_json(job: Mapping[str, object]) -> JobInfo:
    """One entry of `scontrol show job --json`'s `jobs` list -> JobInfo."""
    return _from_json(
        job,
        state=job.get("job_state"),
        reason=_json_text(job, "state_reason"),
        node_count="node_count",
        times={"start": job.get("start_time"), "end": job.get("end_time")},
        work_dir=_json_text(job, "current_working_directory"),
        stdout=_json_text(job, "standard_output"),
        source="scontrol",
        het_job_id=json_number(job.get("het_job_id")) or None,
    )


def _jobs_document(text: str, command: str) -> tuple[dict[str, Any], list[Any]]:
    """A Slurm ``--json`` answer and its ``jobs`` list; SlurmError (BAD_OUTPUT) when the text
    is not JSON or has no such list. ``command`` names the command in the error."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SlurmError(
            f"{command} printed no JSON: {text.strip()[:200]!r}",
            kind=SlurmErrorKind.BAD_OUTPUT,
        ) from e
    entries = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise SlurmError(f"{command} printed no 'jobs' list", kind=SlurmErrorKind.BAD_OUTPUT)
    return doc, entries


def _json_jobs(text: str) -> list[JobInfo]:
    """`scontrol show job --json` output -> JobInfo per job (SlurmError if it is not JSON)."""
    _, entries = _jobs_document(text, "scontrol show job --json")
    return [job_from_json(j) for j in entries if isinstance(j, dict)]


def job_from_sacct(row: dict[str, str], source: str) -> JobInfo:
    """A `sacct -P` row with SACCT_FIELDS -> JobInfo."""
    code, sig = parse_exit_code(row.get("exitcode"))
    derived, _ = parse_exit_code(row.get("derivedexitcode"))
    state = JobState.from_text(row.get("state"))  # "CANCELLED by 0" -> CANCELLED
    return JobInfo(
        job_id=int(row["jobid"]),
        name=row.get("jobname", ""),
        state=state,
        reason=None,
        exit_code=code,
        exit_signal=sig,
        derived_exit_code=derived,
        nodelist=allocation_nodes(state, null(row.get("nodelist"))),
        num_nodes=to_int(row.get("nnodes")),
        restart_count=None,
        partition=null(row.get("partition")),
        start_time=parse_time(row.get("start")),
        end_time=parse_time(row.get("end")),
        work_dir=null(row.get("workdir")),
        stdout=None,
        source=source,
    )


def job_from_sacct_json(job: Mapping[str, object]) -> JobInfo:
    """One entry of `sacct --json`'s `jobs` list -> JobInfo.

    The fields read are the same in data_parser v0.0.42 (24.11) and v0.0.45 (26.05): `state`
    is `{"current": ["FAILED"], "reason": "None"}`, times are under `time` (epoch, 0 = none),
    the node count is `allocation_nodes`, "None assigned" means no nodes yet.
    """
    state = job.get("state")
    current = state.get("current") if isinstance(state, dict) else state
    reason = state.get("reason") if isinstance(state, dict) else None
    raw_times = job.get("time")
    return _from_json(
        job,
        state=current,
        reason=reason if isinstance(reason, str) else None,
        node_count="allocation_nodes",
        times=raw_times if isinstance(raw_times, dict) else {},
        work_dir=_json_text(job, "working_directory"),
        stdout=_json_text(job, "stdout_expanded") or _json_text(job, "stdout"),
        source="sacct-json",
    )


def sacct_json_records(text: str) -> list[JobInfo]:
    """`sacct --json` output -> JobInfo per entry; SlurmError (BAD_OUTPUT) when it is not
    JSON, has no `jobs` list, or reports errors without jobs."""
    doc, entries = _jobs_document(text, "sacct --json")
    errors = doc.get("errors")
    if not entries and isinstance(errors, list) and errors:
        first = errors[0] if isinstance(errors[0], dict) else {}
        what = first.get("description") or first.get("error") or str(errors[0])
        raise SlurmError(f"sacct --json reported: {what}", kind=SlurmErrorKind.BAD_OUTPUT)
    return [job_from_sacct_json(j) for j in entries if isinstance(j, dict)]
