"""``plan(spec)``: the dry run. The script's ``#SBATCH`` lines applied, the values checked, the
site loaded, Slurm's facts read (a read, never a change), the request, script and rank map
decided; nothing written, nothing submitted. ``submit`` takes what this returns."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_supernode.api.wording import in_api_words
from slurm_supernode.errors import InputError
from slurm_supernode.launch.jobspec import JobSpec

if TYPE_CHECKING:
    from slurm_supernode.launch.directives import Directive
    from slurm_supernode.launch.job import JobPlan as LaunchPlan
    from slurm_supernode.launch.request import ClusterFacts, SbatchRequest
    from slurm_supernode.placement.model import RankMap


@dataclass(frozen=True, eq=False)  # one decision: compared by identity
class JobPlan:
    """Everything decided before submission, and what a submission would refuse."""

    asked: JobSpec  # the spec as given (``submit`` re-plans from it when it must)
    spec: JobSpec  # with the script's #SBATCH lines applied (the given values win)
    launch: LaunchPlan  # request, job directory, script and plan.json contents
    directives: tuple[Directive, ...]  # the script's #SBATCH lines
    notices: tuple[str, ...]  # things worth saying (an #SBATCH option that means another thing)
    refusal: InputError | None  # why a submission would be refused (the script is missing)
    facts: ClusterFacts | None  # what the running Slurm offers; None: planned without Slurm

    @property
    def script(self) -> str:
        """The batch script sbatch gets."""
        return self.launch.script

    @property
    def request(self) -> SbatchRequest:
        return self.launch.request

    @property
    def job_dir(self) -> Path:
        """Where the job directory will be (nothing is there before ``submit``)."""
        return self.launch.job_dir

    def sbatch_argv(self) -> list[str]:
        """The sbatch command line a submission runs (the script comes on stdin)."""
        return ["sbatch", *self.launch.request.sbatch_args()]

    def rank_map(self) -> RankMap:
        """Ranks on the devices of an example allocation (the first candidate super nodes)."""
        if self.launch.example_rank_map is not None:
            return self.launch.example_rank_map
        from slurm_supernode.launch.inputs import rank_map_for_job

        return rank_map_for_job(self.launch.inputs, self.launch.site, self.launch.example_hosts)

    def preview(self) -> dict[str, Any]:
        """The plan as ``snrun --dry-run --json`` prints it (with a container: what each
        node's agent runs)."""
        from slurm_supernode.launch.preview import plan_preview

        out = plan_preview(self.launch)
        out["sbatch_directives"] = [d.sbatch_arg for d in self.directives]
        if self.launch.inputs.container is not None:
            from slurm_supernode.runtime.agent_preview import node_commands

            out["node_commands"] = node_commands(self.launch)
        return out


@in_api_words
def plan(spec: JobSpec, *, need_slurm: bool = False) -> JobPlan:
    """Plan ``spec``. Slurm's facts are read where Slurm answers; with ``need_slurm`` an
    unreachable Slurm raises (a submission needs them), and a script the job could not find
    is refused before Slurm is asked. Otherwise a missing script is ``refusal``, not an error
    (a plan for a script still being written is fine)."""
    from slurm_supernode.api.arguments import check_spec, check_type

    spec = check_spec(spec)
    check_type(need_slurm, bool, "need_slurm")
    return plan_parsed(spec, need_slurm=need_slurm)


def plan_parsed(spec: JobSpec, *, need_slurm: bool = False) -> JobPlan:
    """``plan`` of a spec whose fields have their types and ranges already: the command
    line's, built from options its parser typed and bounded (cli/submit.py; the same ranges,
    ``launch.jobspec.COUNTS``), or one ``check_spec`` returned. Not a boundary: a program
    calls ``plan``."""
    from slurm_supernode.launch.directives import directive_notices
    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.launch.job import plan_job
    from slurm_supernode.launch.jobdir import jobs_root
    from slurm_supernode.launch.syntax import check_job_values
    from slurm_supernode.site.loader import load_site

    applied, found = with_directives(spec)
    check_job_values(applied)  # a value that can never work fails a dry run too
    refusal = program_refusal(applied)
    if refusal is not None and need_slurm:
        raise refusal
    site = load_site(applied.site)
    # the runtimes are asked only for an image (companions alone are refused here)
    wants_container = applied.container is not None and applied.container.wanted_image() is not None
    facts = gather_facts(site, required=need_slurm, containers=wants_container)
    root = jobs_root(applied.jobs_dir, site_jobs_dir=site.paths.jobs_dir)
    launch = plan_job(applied, site, facts, jobs_root=root)
    notices = [*directive_notices(found, applied.program), *launch.request.notices]
    return JobPlan(
        asked=spec,
        spec=applied,
        launch=launch,
        directives=tuple(found),
        notices=tuple(notices),
        refusal=refusal,
        facts=facts,
    )


def with_directives(spec: JobSpec) -> tuple[JobSpec, list[Directive]]:
    """The spec with the script's leading ``#SBATCH`` lines applied (the given values win),
    and those lines, for the dry run and for naming a line sbatch refuses."""
    from slurm_supernode.launch.directives import apply_directives, read_directives

    if not spec.module and not spec.program:
        raise InputError("no training script given", where="SCRIPT", hint="snrun train.py ARGS")
    workdir = spec.workdir or os.getcwd()
    directives = [] if spec.module else read_directives(Path(workdir, spec.program))
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    if spec.container is not None:  # the options one by one: the command line's win each
        fields |= {f"container.{k}": v for k, v in dataclasses.asdict(spec.container).items()}
    updates = apply_directives(fields, directives, where=spec.program)
    if "sbatch_args" in updates:
        updates["sbatch_args"] = (*updates["sbatch_args"], *spec.sbatch_args)  # type: ignore[misc]
    container = {k[len("container.") :]: updates.pop(k) for k in list(updates) if "." in k}
    if container:
        from slurm_supernode.launch.container_options import ContainerOptions

        given = spec.container or ContainerOptions()
        updates["container"] = dataclasses.replace(given, **container)  # type: ignore[arg-type]
    return dataclasses.replace(spec, **updates), directives  # type: ignore[arg-type]


def program_refusal(spec: JobSpec) -> InputError | None:
    """Why the job could not find its script, module or working directory; None if it can."""
    from slurm_supernode.launch.snapshot import check_program

    pythonpath = dict(spec.env).get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    try:
        check_program(spec.program, spec.module, spec.workdir or os.getcwd(), pythonpath)
    except InputError as exc:
        return exc
    return None
