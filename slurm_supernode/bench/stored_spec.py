"""The bench run a schedule stores: a typed, versioned form of ``BenchJob``, not argv.

A schedule's runs are planned from this spec every night (``api.schedules``), so the
registry must say *what* to run in a form that outlives the command line: JSON with
``"version": 1`` and the fields of a bench run. The per-run fields (job name, ``--begin``,
the schedule and working directory) are the schedule's, and the site is the schedule's own
``site``: neither is stored here. The ``--container-*`` options are stored as ``container``
(an object of the given ones) only when some were given: specs without it stay as they were.

Registries written before the spec existed held the ``snrun bench submit`` options as argv
(``submit_args``). ``spec_from_argv`` reads those written by snrun (flag, value pairs of a
closed set of options) without argparse; anything else is refused with the way to re-install.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from slurm_supernode.bench.submit import BenchJob
from slurm_supernode.launch.container_options import ContainerOptions

SPEC_VERSION = 1

# The stored fields and their types (profiles: a list of names).
_INT_FIELDS = ("count", "nproc_per_node", "iters", "warmup")
_STR_FIELDS = ("supernodes", "sizes", "collectives", "scopes", "dtype", "backend", "db", "time",
               "partition", "jobs_dir")  # fmt: skip
STORED_FIELDS = (*_INT_FIELDS, *_STR_FIELDS, "profiles", "container")

# The options snrun wrote into old registries (cli job_option_argv), to the field each sets.
_OLD_FLAGS = {
    "--supernodes": "supernodes",
    "-S": "count",
    "--nproc-per-node": "nproc_per_node",
    "--sizes": "sizes",
    "--collectives": "collectives",
    "--scopes": "scopes",
    "--dtype": "dtype",
    "--iters": "iters",
    "--warmup": "warmup",
    "--backend": "backend",
    "--db": "db",
    "--time": "time",
    "--partition": "partition",
    "--env-profile": "profiles",
    "--profile": "profiles",  # the old name of --env-profile
    "--jobs-dir": "jobs_dir",
}


class SpecError(ValueError):
    """A stored spec this version cannot read (the message says what)."""


def spec_to_dict(job: BenchJob) -> dict[str, Any]:
    """The stored form: ``{"version": 1, <field>: value, ...}`` (defaults included)."""
    data: dict[str, Any] = {"version": SPEC_VERSION}
    for name in STORED_FIELDS:
        value = getattr(job, name)
        if name == "container":
            if job.container.to_dict():  # the given --container-* options, when there are
                data[name] = job.container.to_dict()
            continue
        data[name] = list(value) if name == "profiles" else value
    return data


def spec_from_dict(data: Mapping[str, Any], *, site: str) -> BenchJob:
    """The ``BenchJob`` of a stored spec, planned with ``site``; SpecError if unreadable."""
    if not isinstance(data, Mapping):
        raise SpecError(f"the spec is a {type(data).__name__}, not an object")
    version = data.get("version")
    if version != SPEC_VERSION:
        raise SpecError(
            f"spec version {version!r} is not {SPEC_VERSION} (written by another snrun)"
        )
    unknown = sorted(set(data) - {"version", *STORED_FIELDS})
    if unknown:
        raise SpecError(f"unknown spec field(s) {', '.join(unknown)}")
    fields: dict[str, Any] = {}
    for name in _INT_FIELDS:
        if name in data:
            fields[name] = _typed(name, data[name], int)
    for name in _STR_FIELDS:
        if name in data:
            fields[name] = _typed(name, data[name], str)
    if "profiles" in data:
        profiles = data["profiles"]
        if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
            raise SpecError(f"profiles is {profiles!r}, not a list of names")
        fields["profiles"] = tuple(profiles)
    if "container" in data:  # absent from specs stored before bench could run in an image
        if not isinstance(data["container"], Mapping):
            raise SpecError(f"container is {data['container']!r}, not an object")
        try:
            fields["container"] = ContainerOptions.from_dict(data["container"])
        except ValueError as exc:
            raise SpecError(str(exc)) from None
    for name in ("collectives", "scopes", "dtype", "iters", "warmup", "backend"):
        if fields.get(name, 0) is None:  # these have defaults, never "unset"
            raise SpecError(f"{name} is null")
    return BenchJob(site_arg=site, **fields)


def _typed(name: str, value: Any, kind: type) -> Any:
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise SpecError(f"{name} is {value!r}, not {'a whole number' if kind is int else 'text'}")


def spec_from_argv(argv: Sequence[str], *, site: str) -> BenchJob:
    """An old registry's ``submit_args`` (``["--sizes", "1M", "-S", "2", ...]``) as a
    ``BenchJob``; SpecError for anything snrun did not write there."""
    if len(argv) % 2:
        raise SpecError(f"options {list(argv)!r} are not flag, value pairs")
    fields: dict[str, Any] = {}
    profiles: list[str] = []
    for flag, value in zip(argv[0::2], argv[1::2], strict=True):
        name = _OLD_FLAGS.get(flag)
        if name is None:
            raise SpecError(f"unknown option {flag}")
        if name == "profiles":
            profiles.append(value)
        elif name in _INT_FIELDS:
            try:
                fields[name] = int(value)
            except ValueError:
                raise SpecError(f"{flag} {value!r} is not a whole number") from None
        else:
            fields[name] = value
    return BenchJob(site_arg=site, profiles=tuple(profiles), **fields)
