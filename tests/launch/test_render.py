from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.launch.job import plan_job
from slurm_supernode.launch.jobspec import JobSpec, parse_env_items
from slurm_supernode.site.model import EnvProfile, SlurmSettings
from tests.placement.sites import make_site

ROOT = Path(__file__).resolve().parents[2]

HOSTILE = ["a b", "$(touch /tmp/snrun-pwned)", "`id`", "x\ny", "it's", '"dq"', "*", "--", ""]


def site():
    s = make_site(2, 4, 8, 2)
    return dataclasses.replace(
        s,
        slurm=SlurmSettings(partition="main", strategy="features"),
        env_profiles={
            "default": EnvProfile("default", (("NCCL_DEBUG", "WARN"), ("SHARED", "site"))),
            "nvidia": EnvProfile("nvidia", (("NCCL_NVLS_ENABLE", "0"),)),
        },
    )


def plan(tmp_path: Path, **kw):
    base = dict(
        program="train.py", program_args=tuple(HOSTILE), workdir=str(tmp_path), snapshot=False
    )
    base.update(kw)
    return plan_job(JobSpec(**base), site(), None, jobs_root=tmp_path / "jobs", token="t0")


def test_rendered_script_passes_bash_n(tmp_path: Path) -> None:
    p = plan(tmp_path, job_name="we'ird $(name)", sbatch_args=("--comment=a\nnext",), supernodes=2)
    script = tmp_path / "job.sh"
    script.write_text(p.script)
    subprocess.run(["bash", "-n", str(script)], check=True)
    # an sbatch argument listed in the header cannot escape its comment line
    for line in p.script.splitlines():
        assert not line.startswith("next")
    with pytest.raises(InputError, match="-J/--job-name: .* holds a control character"):
        plan(tmp_path, job_name="name\nnext")  # refused before anything is rendered


def test_hostile_arguments_and_env_reach_the_program_literally(tmp_path: Path) -> None:
    launch = tmp_path / "launch.j2"
    launch.write_text(
        '{{ python }} -c \'import json, os, sys; print(json.dumps({"argv": sys.argv[1:], '
        '"env": {k: os.environ.get(k) for k in ("FOO", "SHARED", "NCCL_DEBUG", '
        '"NCCL_NVLS_ENABLE")}}))\' {{ program_argv|argv }}\nsnrun_rc=0\n'
    )
    env = parse_env_items(["FOO=$(echo no) `id` 'q' \"d\"\nline2", "SHARED=user"])
    p = plan(tmp_path, env=env, blocks=(("launch", str(launch)),))
    script = tmp_path / "job.sh"
    script.write_text(p.script)
    out = subprocess.run(["bash", str(script)], check=True, capture_output=True, text=True)
    got = json.loads(out.stdout)
    assert got["argv"] == ["train.py", *HOSTILE]
    assert got["env"] == {
        "FOO": "$(echo no) `id` 'q' \"d\"\nline2",
        "SHARED": "user",  # --env beats the site profile
        "NCCL_DEBUG": "WARN",
        "NCCL_NVLS_ENABLE": "0",
    }
    assert not Path("/tmp/snrun-pwned").exists()


def test_template_env_block_sits_between_site_and_user(tmp_path: Path) -> None:
    tmpl = tmp_path / "mine.sh.j2"
    tmpl.write_text(
        '{% extends "sbatch.sh.j2" %}{% block template_env %}export SHARED=template\n'
        "export TONLY=1\n{% endblock %}"
    )
    p = plan(tmp_path, template=str(tmpl))
    lines = p.script.splitlines()
    order = [i for i, line in enumerate(lines) if line.startswith("export SHARED=")]
    assert [lines[i] for i in order] == ["export SHARED=site", "export SHARED=template"]
    p2 = plan(tmp_path, template=str(tmpl), env=(("SHARED", "user"),))
    assert p2.script.rindex("export SHARED=user") > p2.script.index("export SHARED=template")


def test_module_mode_and_bad_inputs(tmp_path: Path) -> None:
    p = plan(tmp_path, program="pkg.train", module=True, program_args=("--lr", "1e-3"))
    assert p.agent_inputs["program_argv"] == ["-m", "pkg.train", "--lr", "1e-3"]
    with pytest.raises(InputError, match="unknown template block 'nope'.*valid: header"):
        plan(tmp_path, blocks=(("nope", str(tmp_path)),))
    with pytest.raises(InputError, match="template 'missing.j2' not found"):
        plan(tmp_path, template="missing.j2")
    with pytest.raises(InputError, match="--env: bad value"):
        parse_env_items(["1BAD=x"])
    with pytest.raises(InputError, match="--nproc-per-node 9 is out of range"):
        plan(tmp_path, nproc_per_node=9)


def test_dry_run_cli_submits_nothing(tmp_path: Path) -> None:
    """Through the real CLI: script + plan printed, no job directory written."""
    (tmp_path / "train.py").write_text("")
    site_yaml = Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml"
    if not site_yaml.exists():
        pytest.skip("bundled local.yaml not merged yet")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "slurm_supernode",
            "--site",
            str(site_yaml),
            "-S",
            "2",
            "--nproc-per-node",
            "2",
            "--jobs-dir",
            str(tmp_path / "jobs"),
            "--dry-run",
            "train.py",
            "$(x)",
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "SLURM_CONF": "/nonexistent", "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "sbatch --job-name=train.py" in out.stdout and "world size 16" in out.stdout
    assert "'$(x)'" in out.stdout
    assert not (tmp_path / "jobs").exists()


def test_compiled_template_cache_is_used_and_never_stale(tmp_path: Path, monkeypatch) -> None:
    """The per-user cache of compiled templates fills on the first render, serves the second,
    and an edited template is recompiled (its source checksum changed)."""
    from slurm_supernode.launch.render import render_sbatch

    cache = tmp_path / "cache"
    monkeypatch.setenv("SNRUN_CACHE_DIR", str(cache))
    tmpl = tmp_path / "mine.sh.j2"
    tmpl.write_text("#!/bin/bash\necho {{ word }}\n")
    assert render_sbatch({"word": "a b"}, template=str(tmpl)) == "#!/bin/bash\necho 'a b'\n"
    entries = list((cache / "jinja").iterdir())
    assert len(entries) == 1 and entries[0].stat().st_size > 0
    assert (cache / "jinja").stat().st_mode & 0o777 == 0o700
    tmpl.write_text("#!/bin/bash\necho changed {{ word }}\n")
    assert render_sbatch({"word": "x"}, template=str(tmpl)) == "#!/bin/bash\necho changed x\n"


def test_template_cache_off_unwritable_or_foreign_costs_only_the_compile(
    tmp_path: Path, monkeypatch
) -> None:
    from slurm_supernode.launch.render import bytecode_cache, render_sbatch

    assert bytecode_cache({"SNRUN_CACHE_DIR": "off"}) is None
    shared = tmp_path / "shared"
    (shared / "jinja").mkdir(parents=True)
    (shared / "jinja").chmod(0o777)  # others could plant compiled code: not used
    assert bytecode_cache({"SNRUN_CACHE_DIR": str(shared)}) is None
    blocked = tmp_path / "file"
    blocked.write_text("")  # the cache folder cannot be made under a file
    assert bytecode_cache({"SNRUN_CACHE_DIR": str(blocked)}) is None
    readonly = tmp_path / "ro"
    (readonly / "jinja").mkdir(parents=True, mode=0o700)
    monkeypatch.setenv("SNRUN_CACHE_DIR", str(readonly))
    cache = bytecode_cache()
    assert cache is not None
    # a cache that cannot be written: the render still succeeds
    monkeypatch.setattr(cache, "directory", str(tmp_path / "missing" / "jinja"))
    monkeypatch.setattr("slurm_supernode.launch.render.bytecode_cache", lambda: cache)
    tmpl = tmp_path / "t.sh.j2"
    tmpl.write_text("echo {{ x }}\n")
    assert render_sbatch({"x": "$(id)"}, template=str(tmpl)) == "echo '$(id)'\n"


def test_fork_workers_refuses_a_module(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="forked workers are off for -m modules"):
        plan(tmp_path, program="pkg.train", module=True, fork_workers=True)
    job = plan(tmp_path, fork_workers=True)
    assert job.agent_inputs["fork_workers"] is True


def test_restart_budgets_reach_the_job(tmp_path: Path) -> None:
    """The site's `restarts:` go into plan.json; --max-restarts is exported only when given."""
    job = plan_job(
        JobSpec(program="train.py", workdir=str(tmp_path)),
        dataclasses.replace(site(), restarts=(("app_error", 1),)),
        None,
        jobs_root=tmp_path / "jobs",
        token="t1",
    )
    assert job.agent_inputs["site_restarts"] == {"app_error": 1}
    assert job.agent_inputs["max_restarts"] is None
    assert "SNRUN_MAX_RESTARTS" not in job.script
    assert "export SNRUN_MAX_RESTARTS=2\n" in plan(tmp_path, max_restarts=2).script


def test_layout_options_reach_the_agent_and_are_checked_before_submission(tmp_path: Path) -> None:
    """--tp/--ep/--etp/--framework/--use-tp-pp-dp-mapping: parsed once, the agent's rank map
    (from plan.json) has the same groups as `snrun plan`; a layout Megatron refuses is refused."""
    import argparse

    from slurm_supernode.cli.submit import add_arguments, spec_from_args
    from slurm_supernode.launch.inputs import JobInputs, rank_map_for_job
    from slurm_supernode.placement.rankmap import build_rank_map, group_ranks

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    argv = ["-S", "2", "--tp", "2", "--ep", "4", "--etp", "1", "--use-tp-pp-dp-mapping"]
    spec = spec_from_args(parser.parse_args([*argv, "train.py"]))
    assert (spec.layout.etp, spec.layout.order) == (1, "tp-cp-ep-pp-dp")
    p = plan_job(dataclasses.replace(spec, workdir=str(tmp_path)), site(), None,
                 jobs_root=tmp_path / "jobs", token="t1")  # fmt: skip
    assert p.agent_inputs["layout"]["etp"] == 1
    in_job = rank_map_for_job(
        JobInputs.from_dict(json.loads(p.inputs.to_json())), site(), p.example_hosts
    )
    planned = build_rank_map(site(), p.example_hosts, spec.layout)
    for dim in ("tp", "dp", "ep", "etp", "edp"):
        assert group_ranks(in_job, dim) == group_ranks(planned, dim)
    assert group_ranks(in_job, "ep")[0] == [0, 1, 2, 3]  # etp=1: EP neighbours adjacent
    bad = spec_from_args(parser.parse_args(["-S", "2", "--tp", "8", "--ep", "16", "train.py"]))
    with pytest.raises(PlacementError, match="expert_tensor_model_pipeline_parallel"):
        plan_job(dataclasses.replace(bad, workdir=str(tmp_path)), site(), None,
                 jobs_root=tmp_path / "jobs", token="t2")  # fmt: skip


def test_plan_model_goes_into_the_job(tmp_path: Path) -> None:
    """--plan-model: the job's ranks get the preset (runtime/plan_share reads it), quoted."""
    p = plan(tmp_path, supernodes=2, plan_model="llama-70b")
    assert "SNRUN_PLAN_MODEL=llama-70b" in p.script or "SNRUN_PLAN_MODEL='llama-70b'" in p.script
    assert "SNRUN_PLAN_MODEL" not in plan(tmp_path, supernodes=2).script
    with pytest.raises(InputError) as info:
        plan(tmp_path, supernodes=2, plan_model="llama-7")
    assert info.value.where == "--plan-model"
