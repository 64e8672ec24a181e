"""The job inputs: what the login side decides for the job (``plan.json`` in the job directory)
and the job reads back. Typed and versioned: an unknown or missing key, a wrong type or another
schema is a one-line JobError, never a silent default.

Written by ``launch.job`` at submit, read by ``runtime`` (supervisor, agent) and by the dry-run
preview; it lives here, with the side that writes it, so ``runtime`` imports ``launch`` and
never the other way.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_supernode.errors import JobError
from slurm_supernode.placement.model import Layout, RankMap
from slurm_supernode.site.model import Site

if TYPE_CHECKING:
    from slurm_supernode.launch.container import ContainerSpec

SCHEMA = 2  # 1 was the untyped dict of snrun <= 0.x (no "schema" key)
FILE = "plan.json"


@dataclass(frozen=True)
class JobInputs:
    """Everything the job needs from the submit step, besides the site copy and the script."""

    snrun_version: str
    job_name: str
    site_file: str  # the job directory's copy of the site
    site_name: str
    vendor: str
    layout: dict[str, Any]  # Layout.as_dict(): the dp given here is derived again in the job
    nproc_per_node: int | None
    allow_partial: bool
    strategy: str
    supernodes: int | None
    nodes: int
    max_restarts: int | None  # --max-restarts; None: the site's `restarts:`, else defaults
    site_restarts: dict[str, int]
    preflight: bool
    fork_workers: bool
    hang_timeout: float  # seconds without a new heartbeat that count as a hang; 0: off
    hang_startup: float | None  # grace before the first heartbeat; None: max(600, timeout)
    program_argv: tuple[str, ...]
    python: str  # interpreter that runs the supervisor and the agents
    workdir: str
    request: dict[str, Any]  # SbatchRequest.as_dict(), for resubmission and status
    # the code copy every attempt runs: {"dir", "source", "module"}; None: --no-snapshot
    snapshot: dict[str, Any] | None = None
    # ContainerSpec.to_dict() of the training step's container; None: on the host. Optional
    # in the file (plans written before containers existed have none).
    container: dict[str, Any] | None = None
    # A sweep's task (launch/array_plan.py): {"dir": the sweep's directory, "task": its index in
    # the job array, "params": {name: value}}; None: a plain job. Optional in the file.
    sweep: dict[str, Any] | None = None
    schema: int = SCHEMA
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.pop("extra")
        out["program_argv"] = list(self.program_argv)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = FILE) -> JobInputs:
        """Check and convert; every problem is a JobError naming the key."""
        if not isinstance(data, Mapping):
            raise JobError("the job inputs are not a JSON object", where=where)
        schema = data.get("schema")
        if schema != SCHEMA:
            raise JobError(
                f"job inputs of schema {schema!r}, this snrun reads schema {SCHEMA}",
                where=where,
                hint="submit the job again with this snrun version",
            )
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise JobError(f"unknown key(s) in the job inputs: {', '.join(unknown)}", where=where)
        missing = [n for n in names if n not in data and n not in _OPTIONAL]
        if missing:
            raise JobError(f"missing key(s) in the job inputs: {', '.join(missing)}", where=where)
        values: dict[str, Any] = {}
        for name in names:
            if name not in data:
                continue
            value = data[name]
            if name == "program_argv" and isinstance(value, list):
                value = tuple(value)
            if not _is_a(value, hints[name]):
                raise JobError(
                    f"job input {name!r} has the wrong type ({type(value).__name__})", where=where
                )
            values[name] = float(value) if name == "hang_timeout" else value
        argv = values["program_argv"]
        if not argv or not all(isinstance(a, str) for a in argv):
            raise JobError(
                "job input 'program_argv' must be a non-empty list of strings", where=where
            )
        return cls(**values)

    @classmethod
    def read(cls, job_dir: Path) -> JobInputs:
        path = job_dir / FILE
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise JobError(f"cannot read the job inputs: {exc}", where=str(path)) from None
        return cls.from_dict(data, where=str(path))

    def container_spec(self) -> ContainerSpec | None:
        """The training step's container, checked; None: torchrun runs on the host."""
        if self.container is None:
            return None
        from slurm_supernode.launch.container import ContainerSpec

        return ContainerSpec.from_dict(self.container)

    def layout_obj(self) -> Layout:
        """The Layout; dp (and edp) are derived again from the hosts by the rank map."""
        return Layout.from_dict(self.layout)


_OPTIONAL = ("schema", "container", "sweep")


def _is_a(value: Any, hint: Any) -> bool:
    """isinstance for the few annotations used above (X | None, dict[..], tuple[..])."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_is_a(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    base = origin or hint
    return isinstance(value, base)


def load_inputs(job_dir: Path) -> JobInputs:
    """The job inputs of ``job_dir`` (checked)."""
    return JobInputs.read(job_dir)


def rank_map_for_job(inputs: JobInputs, site: Site, hosts: list[str]) -> RankMap:
    from slurm_supernode.placement.rankmap import build_rank_map

    return build_rank_map(site, hosts, inputs.layout_obj(), inputs.nproc_per_node)
