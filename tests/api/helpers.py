"""A local site under tmp_path and fake Slurm calls for the API's unit tests (the real
Slurm is exercised by tests/integration)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]


def site_file(tmp_path: Path) -> str:
    """The local site with its jobs, results and state under tmp_path."""
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    text = text.replace("jobs_dir: ~/.snrun/jobs", f"jobs_dir: {tmp_path}/jobs")
    text = text.replace("results_db: ~/.snrun/bench.sqlite", f"results_db: {tmp_path}/r.sqlite")
    text += f"  state_dir: {tmp_path}/state\n"
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return str(path)


class FakeSlurm:
    """sbatch, squeue-by-name, scancel and scrontab as plain Python: records what was asked."""

    def __init__(self, monkeypatch, *, has_scrontab: bool = False) -> None:
        from slurm_supernode.launch import facts, job
        from slurm_supernode.slurm import job_lookup, jobs, scrontab, version

        self.plans: list = []
        self.queue: list[SimpleNamespace] = []
        self.cancelled: list[int] = []
        self.scrontab = ""
        self.next_id = 100
        self.fail_submit: Exception | None = None
        monkeypatch.setattr(facts, "gather_facts", lambda site, required, containers=False: None)
        monkeypatch.setattr(job, "submit_job", self.submit)
        monkeypatch.setattr(job_lookup, "jobs_named", self.jobs_named)
        monkeypatch.setattr(jobs, "cancel", self.cancelled.append)
        monkeypatch.setattr(scrontab, "read_scrontab", lambda: self.scrontab)
        monkeypatch.setattr(scrontab, "write_scrontab", self.write_scrontab)
        why = None if has_scrontab else "no scrontab client"
        feats = SimpleNamespace(has_scrontab=has_scrontab, scrontab_why_not=why)
        monkeypatch.setattr(version, "detect_features", lambda: feats)

    def submit(self, plan) -> int:
        if self.fail_submit is not None:
            raise self.fail_submit
        self.next_id += 1
        self.plans.append(plan)
        self.queue.append(
            SimpleNamespace(job_id=self.next_id, name=plan.spec.job_name, pending=True,
                            state="PENDING", start_time=None, het_component=False)
        )  # fmt: skip
        return self.next_id

    def jobs_named(self, name: str) -> list:
        return [j for j in self.queue if j.name == name]

    def write_scrontab(self, text: str) -> None:
        self.scrontab = text
