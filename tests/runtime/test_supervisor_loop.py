"""The supervisor's whole loop, in-process, against fake srun/scontrol/sbatch (fake_slurm.py):
every action (complete, restart, requeue, resubmit fallback, stop, leave to Slurm), hangs,
budgets, cancel, SIGTERM and SIGUSR2 - in seconds, without a cluster. The same paths on the
real cluster: tests/integration/test_resubmission.py."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from slurm_supernode.chain import ledger
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.runtime.classify import ExitCode
from slurm_supernode.runtime.failfast import read_stop
from slurm_supernode.runtime.supervisor import Supervisor
from slurm_supernode.runtime.supervisor_config import SupervisorConfig
from tests.runtime.inputs import make_inputs

ROOT = Path(__file__).resolve().parents[2]
FAKE = Path(__file__).with_name("fake_slurm.py")
HOSTS = "n[0-1]"


class Harness:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp = tmp_path
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for name in ("srun", "scontrol", "sbatch"):
            path = self.bin / name
            path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" {name} "$@"\n')
            path.chmod(path.stat().st_mode | stat.S_IEXEC)
        self.calls = tmp_path / "calls.jsonl"
        self.scenario = tmp_path / "scenario.json"
        self.job_dir = tmp_path / "jobs" / "job-1"
        (self.job_dir / "logs").mkdir(parents=True)
        (self.job_dir / "job.sh").write_text("#!/bin/bash\ntrue\n")
        self.env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "FAKE_CALLS": str(self.calls),
            "FAKE_SCENARIO": str(self.scenario),
            "SLURM_JOB_ID": "500",
            "SLURM_JOB_NODELIST": HOSTS,
        }
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("SLURM_CONF", raising=False)
        self.released: list[tuple] = []
        self.held: list[bool] = []

    def run(self, scenario: dict, *, env: dict[str, str] | None = None, **inputs) -> ExitCode:
        self.scenario.write_text(json.dumps(scenario))
        environ = self.env | (env or {})
        config = SupervisorConfig.from_job(
            self.job_dir,
            make_inputs(**inputs),
            JobEnvironment.from_environ(environ),
            environ,
        )
        fast = {"poll": 0.05, "backoff": 0.0, "stop_grace": 1.0}
        config = type(config)(**{**config.__dict__, **fast})

        def releaser(job_id, exclude, log, prefer, held):
            self.released.append((job_id, exclude))
            self.held.append(held)

        return Supervisor(config, releaser=releaser).run()

    def commands(self, name: str) -> list[list[str]]:
        if not self.calls.exists():
            return []
        rows = [json.loads(line) for line in self.calls.read_text().splitlines()]
        return [r["argv"][1:] for r in rows if r["argv"][0] == name]

    def agent_steps(self) -> int:
        return sum(1 for a in self.commands("srun") if "agent" in a)

    def ends(self) -> list[tuple[str, str]]:
        recs = ledger.read(self.job_dir)
        return [(r["cause"], r["action"]) for r in recs if r["event"] == "attempt_end"]

    def final(self) -> dict | None:
        return ledger.fold(ledger.read(self.job_dir)).final

    def events(self) -> list[str]:
        return [r["event"] for r in ledger.read(self.job_dir)]

    def requeued_how(self) -> list[str]:
        return [r["how"] for r in ledger.read(self.job_dir) if r["event"] == "requeued"]


@pytest.fixture
def h(tmp_path, monkeypatch) -> Harness:
    return Harness(tmp_path, monkeypatch)


OK = {"exits": {"n0": 0, "n1": 0}, "rc": 0}
FAIL_FAST_OFF = {"SNRUN_FAIL_FAST": "0"}


def test_without_fail_fast_the_other_nodes_are_left_to_end_by_themselves(h):
    """The opt-out (SNRUN_FAIL_FAST=0): nobody stops the lingering node."""
    lingering = {"exits": {"n1": 1}, "linger": {"n0": 0}, "linger_s": 2}
    h.run({"attempts": [lingering, OK]}, env=FAIL_FAST_OFF)
    (first, _) = [r for r in ledger.read(h.job_dir) if r["event"] == "attempt_end"]
    assert first["exit_code"] == 98  # nobody ended the step
    assert not (h.job_dir / "stop").exists()


def test_success_completes_the_chain(h):
    assert h.run({"attempts": [OK]}) is ExitCode.OK
    assert h.ends() == [("success", "complete")]
    assert h.final()["state"] == "COMPLETED"
    (step,) = h.commands("srun")
    assert "--nodes=2" in step and step[step.index("--job-dir") + 1] == str(h.job_dir)


def test_app_error_restarts_in_the_allocation(h):
    failed = {"exits": {"n0": 1, "n1": 0}, "rc": 1, "heartbeat": "step 1"}
    assert h.run({"attempts": [failed, OK]}) is ExitCode.OK
    assert h.ends() == [("app_error", "restart"), ("success", "complete")]
    assert h.agent_steps() == 2 and h.commands("scontrol")[0][:2] == ["show", "node"]


def test_one_node_failing_ends_the_step_on_every_node_at_once(h):
    """Fail fast is the default. n1's ranks fail while n0's wait (torchrun's 300 s exit
    barrier): the supervisor asks the other agents to stop as soon as n1's agent reports; n0's
    agent stops its torchrun and still records its exit, then the step ends by itself (no
    SIGTERM from outside). n1 is named as the cause and n0 is not blamed."""
    lingering = {"exits": {"n1": 1}, "linger": {"n0": 137}, "heartbeat": "step 1"}
    assert h.run({"attempts": [lingering, OK]}) is ExitCode.OK
    recs = [r for r in ledger.read(h.job_dir) if r.get("attempt") == 0]
    (end,) = [r for r in recs if r["event"] == "attempt_end"]
    assert (end["cause"], end["action"], end["exit_code"]) == ("app_error", "restart", 137)
    assert end["detail"].startswith("ranks exited non-zero (n1=1)") and not end["exclude"]
    # the failing node's record, then the request, then the stopped node's record
    order = [(r["event"], r.get("node")) for r in recs if r["event"] != "attempt_start"]
    assert order[:3] == [("node_exit", "n1"), ("stop_requested", None), ("node_exit", "n0")]
    (stopped,) = [r for r in recs if r["event"] == "node_exit" and r.get("stopped")]
    assert stopped["node"] == "n0" and stopped["stopped"] == "n1 failed first"
    assert read_stop(h.job_dir, 0).failed == ("n1",)


def test_a_rank_that_raised_ends_the_step_before_its_torchrun_exits(h):
    """A forked rank records its exception itself (rank_failed): no node_exit is needed to
    end the step, and the detail names the rank and its exception."""
    raised = {"raised": {"n1": "RuntimeError: boom"}, "linger": {"n0": 137, "n1": 1}}
    assert h.run({"attempts": [raised, OK]}) is ExitCode.OK
    (end, _) = [r for r in ledger.read(h.job_dir) if r["event"] == "attempt_end"]
    assert end["cause"] == "app_error" and end["action"] == "restart"
    assert end["detail"] == "rank 1: RuntimeError: boom on n1; step ended on every node"
    request = read_stop(h.job_dir, 0)
    assert request.failed == ("n1",) and request.stops("n0") and not request.stops("n1")


def test_agents_that_do_not_stop_are_ended_from_outside_after_the_grace(h):
    """The safety net: agents that cannot act on the stop request (here: deaf to it) do not
    leave the step waiting; after ``stop_grace`` the supervisor signals srun."""
    deaf = {"exits": {"n1": 1}, "linger": {"n0": 0}, "deaf": True, "heartbeat": "step 1"}
    assert h.run({"attempts": [deaf, OK]}) is ExitCode.OK
    (end, _) = [r for r in ledger.read(h.job_dir) if r["event"] == "attempt_end"]
    assert (end["cause"], end["exit_code"]) == ("app_error", 143)
    assert "stop_requested" in h.events()


def test_a_stop_signal_is_not_cut_short_by_a_node_that_exits_non_zero(h):
    """While ranks checkpoint after SIGUSR2, a node that exits non-zero does not end the
    step on the others (they may still be writing their checkpoint)."""
    usr2 = {"signal_parent": "USR2", "exits": {"n1": 1}, "linger": {"n0": 0}, "linger_s": 3}
    h.run({"attempts": [usr2]})
    (end,) = [r for r in ledger.read(h.job_dir) if r["event"] == "attempt_end"]
    assert end["exit_code"] == 98  # the step ran to its own end
    assert end["cause"] == "time_limit"
    assert not (h.job_dir / "stop").exists()


def test_configuration_error_is_not_retried(h):
    """An agent that cannot build the HCCL rank table (site and hardware disagree): the same
    inputs would fail the same way, so the chain stops after one attempt, budget or not."""
    bad = {"config_errors": {"n1": "rank table: site and hardware disagree"}, "linger": {"n0": 143}}
    assert h.run({"attempts": [bad, OK]}) is ExitCode.FAILED
    assert h.ends() == [("config", "stop")] and h.agent_steps() == 1
    assert "configuration error on n1: rank table: site and hardware" in h.final()["reason"]


def test_same_failure_twice_at_the_same_point_stops(h):
    failed = {"exits": {"n0": 1, "n1": 0}, "rc": 1, "heartbeat": "step 1"}
    assert h.run({"attempts": [failed, failed, OK]}) is ExitCode.FAILED
    assert h.ends() == [("app_error", "restart"), ("app_error", "stop")]
    assert h.final()["state"] == "FAILED" and "same failure twice" in h.final()["reason"]


def test_budget_used_up_stops(h):
    attempts = [{"exits": {"n0": 1, "n1": 0}, "rc": 1, "heartbeat": f"step {i}"} for i in range(3)]
    assert h.run({"attempts": attempts}, max_restarts=1) is ExitCode.FAILED
    assert h.ends() == [("app_error", "restart"), ("app_error", "stop")]
    assert "budget of 1 used up" in h.final()["reason"]


def test_lost_node_requeues_with_it_excluded(h):
    lost = {"exits": {"n0": 0}, "rc": 1}
    assert h.run({"attempts": [lost], "bad_nodes": ["n1"]}) is ExitCode.OK
    assert h.ends() == [("node_failure", "requeue")]
    assert h.released == [(500, ("n1",))]
    assert ["requeue", "500"] in h.commands("scontrol")
    assert h.events()[-1] == "requeued" and h.final() is None
    assert h.commands("sbatch") == []


def test_refused_requeue_falls_back_to_a_fresh_job(h):
    lost = {"exits": {"n0": 0}, "rc": 1}
    code = h.run({"attempts": [lost], "bad_nodes": ["n1"], "requeue_fails": True})
    assert code is ExitCode.OK
    (args,) = h.commands("sbatch")
    assert args[:3] == ["--parsable", "--dependency=afterany:500", "--exclude=n1"]
    assert args[3:] == ["--nodes=2"]  # the job's own sbatch options, from the job inputs
    rec = list(ledger.read(h.job_dir))[-1]
    assert (rec["event"], rec["new_job_id"]) == ("resubmitted", 1001)


def test_requeue_and_resubmit_both_refused_is_final(h):
    lost = {"exits": {"n0": 0}, "rc": 1}
    scenario = {"attempts": [lost], "bad_nodes": ["n1"], "requeue_fails": True}
    assert h.run(scenario | {"sbatch_fails": True}) is ExitCode.FAILED
    assert h.final()["state"] == "FAILED"
    assert "requeue failed" in h.final()["reason"] and "resubmit failed" in h.final()["reason"]


# The hung attempt reports progress once, then none; the next one finishes ("done ..." ends
# hang detection). Startup grace is long so a slow machine never looks hung before starting.
HUNG = {"hang": True, "heartbeat": "step 1"}
DONE = OK | {"heartbeat": "done"}


def test_hang_is_stopped_and_restarted(h):
    env = {"SNRUN_HANG_TIMEOUT": "0.3", "SNRUN_HANG_STARTUP": "30"}
    assert h.run({"attempts": [HUNG, DONE]}, env=env) is ExitCode.OK
    assert h.ends() == [("hang", "restart"), ("success", "complete")]


def test_hung_attempt_leaves_stack_dumps_before_the_stop(h):
    env = {"SNRUN_HANG_TIMEOUT": "0.3", "SNRUN_HANG_STARTUP": "30"}
    assert h.run({"attempts": [HUNG, DONE]}, env=env) is ExitCode.OK
    (dump,) = [c for c in h.commands("srun") if "--overlap" in c]
    assert "--jobid=500" in dump and "--nodelist=n[0-1]" in dump and "stacks" in dump
    assert "main (train.py:7)" in (h.job_dir / "logs/attempt0/stacks/rank0.txt").read_text()


def test_without_heartbeat_silence_is_a_hang_and_output_is_progress(h):
    """No heartbeat at all: a step that writes nothing for the timeout is hung (default on)."""
    code = h.run({"attempts": [{"hang": True}, DONE]}, env={"SNRUN_HANG_TIMEOUT": "5"})
    assert code is ExitCode.OK and h.ends()[0] == ("hang", "restart")


def test_hang_timeout_from_the_job_inputs(h):
    code = h.run({"attempts": [HUNG, DONE]}, hang_timeout=0.3, hang_startup=30.0)
    assert code is ExitCode.OK and h.ends()[0] == ("hang", "restart")


def test_no_first_heartbeat_within_the_startup_grace_is_a_hang(h):
    code = h.run({"attempts": [{"hang": True}, DONE]}, hang_timeout=30.0, hang_startup=2.0)
    assert code is ExitCode.OK and h.ends()[0] == ("hang", "restart")


def test_cancelled_chain_runs_nothing(h):
    ledger.append(h.job_dir, "final", state="CANCELLED", reason="snrun cancel")
    assert h.run({"attempts": [OK]}) is ExitCode.OK
    assert h.commands("srun") == [] and h.ends() == []


def test_sigterm_is_forwarded_and_left_to_slurm(h):
    term = {"signal_parent": "TERM", "exits": {"n0": 0, "n1": 0}}
    assert h.run({"attempts": [term]}) is ExitCode.SIGNALLED
    assert h.ends() == [("preemption", "slurm")]
    assert h.final() is None  # Slurm requeues or ends the job; the chain is not over


def test_sigterm_of_a_cancelled_job_reads_as_cancellation(h):
    """scancel: Slurm says CANCELLED; the attempt's cause is no preemption."""
    term = {"signal_parent": "TERM", "exits": {"n0": 0, "n1": 0}}
    assert h.run({"attempts": [term], "job_state": "CANCELLED"}) is ExitCode.SIGNALLED
    assert h.ends() == [("cancelled", "slurm")]
    from slurm_supernode.chain.status import chain_summary, format_chain

    attempt = chain_summary(h.job_dir)["attempts"][0]
    assert attempt["detail"] == "job cancelled (snrun cancel or scancel)"
    assert "preempt" not in format_chain(chain_summary(h.job_dir))


def test_snrun_cancel_records_the_attempt_before_the_step_has_died(h):
    """Slurm SIGKILLs the batch step KillWait seconds after its SIGTERM: a cancelled attempt's
    end is recorded at once, not after a step that is slow to die (a loaded machine)."""
    assert h.run({"attempts": [{"cancelled_by_user": True}]}) is not None
    assert json.loads((h.job_dir / "end_seen_before_step_died").read_text()) is True
    assert h.ends() == [("cancelled", "slurm")]  # recorded once, not again when the step ended
    assert h.final()["state"] == "CANCELLED"


def test_usr2_is_forwarded_then_the_job_requeues_itself(h):
    usr2 = {"signal_parent": "USR2", "exits": {"n0": 0, "n1": 0}, "rc": 0}
    assert h.run({"attempts": [usr2]}) is ExitCode.OK
    assert h.ends() == [("time_limit", "requeue")]
    assert ["requeue", "500"] in h.commands("scontrol") and h.released == [(500, ())]


def test_preflight_failure_requeues_without_the_node_and_runs_no_agents(h):
    scenario = {"attempts": [OK], "health": {"n0": 0, "n1": 2}}
    assert h.run(scenario, preflight=True) is ExitCode.OK
    assert h.ends() == [("health", "requeue")]
    assert h.released == [(500, ("n1",))] and h.agent_steps() == 0


def test_preflight_silent_node_counts_as_failed(h):
    scenario = {"attempts": [OK], "health": {"n0": 1}}  # n1 wrote nothing; n0 only warns
    assert h.run(scenario, preflight=True) is ExitCode.OK
    assert h.released == [(500, ("n1",))]


def test_requeue_by_slurm_closes_the_orphan_attempt_and_goes_on(h):
    ledger.append(h.job_dir, "attempt_start", attempt=0, job_id=500, nodes=HOSTS)
    code = h.run({"attempts": [OK, OK]}, env={"SLURM_RESTART_COUNT": "1"})
    assert code is ExitCode.OK
    assert h.ends() == [("node_failure", "requeue"), ("success", "complete")]


def test_signal_handlers_are_restored(h):
    import signal

    before = signal.getsignal(signal.SIGTERM)
    h.run({"attempts": [OK]})
    assert signal.getsignal(signal.SIGTERM) is before


# --requeue=expedite (Slurm 25.11+, rendered where the cluster allows it): Slurm reruns a
# requeued job at once, before a releaser could exclude anything.
EXPEDITE = {"sbatch_args": ["--requeue=expedite", "--nodes=2"], "heterogeneous": False}


def test_expedited_requeue_with_nothing_to_exclude_is_a_plain_requeue(h):
    usr2 = {"signal_parent": "USR2", "exits": {"n0": 0, "n1": 0}, "rc": 0}
    assert h.run({"attempts": [usr2]}, request=EXPEDITE) is ExitCode.OK
    assert ["requeue", "500"] in h.commands("scontrol")
    assert h.released == [] and h.requeued_how() == ["expedite"]  # no releaser: Slurm reruns it


def test_expedited_requeue_with_a_bad_node_is_held_until_the_releaser_excludes_it(h):
    lost = {"exits": {"n0": 0}, "rc": 1}
    scenario = {"attempts": [lost], "bad_nodes": ["n1"]}
    assert h.run(scenario, request=EXPEDITE) is ExitCode.OK
    scontrol = h.commands("scontrol")
    assert ["requeuehold", "500"] in scontrol and ["requeue", "500"] not in scontrol
    assert h.released == [(500, ("n1",))] and h.held == [True]
    assert h.requeued_how() == ["expedite-held"]


def test_expedited_requeue_keeps_earlier_exclusions_of_the_chain(h):
    """A time-limit requeue after an earlier exclusion still goes through the releaser: the
    rerun must not land on the node an earlier attempt found bad."""
    ledger.append(h.job_dir, "attempt_start", attempt=0, job_id=500, nodes=HOSTS)
    ledger.append(h.job_dir, "attempt_end", attempt=0, job_id=500, exclude=["n7"],
                  cause="health", action="requeue", exit_code=0)  # fmt: skip
    usr2 = {"signal_parent": "USR2", "exits": {"n0": 0, "n1": 0}, "rc": 0}
    assert h.run({"attempts": [usr2, usr2]}, request=EXPEDITE) is ExitCode.OK  # attempt 1
    assert h.ends()[-1] == ("time_limit", "requeue")
    assert h.released == [(500, ("n7",))] and h.held == [True]


def test_without_expedite_the_releaser_starts_the_requeued_job(h):
    lost = {"exits": {"n0": 0}, "rc": 1}
    assert h.run({"attempts": [lost], "bad_nodes": ["n1"]}) is ExitCode.OK
    assert h.held == [False] and h.requeued_how() == ["released"]
    assert not any(c[0] == "requeuehold" for c in h.commands("scontrol"))


def test_sbatch_passthrough_decides_the_requeue_mode(h):
    """--sbatch=--no-requeue after snrun's own --requeue=expedite: the last one counts."""
    from slurm_supernode.runtime.sbatch_argv import expedited

    assert expedited(["--requeue=expedite", "--nodes=2"])
    assert not expedited(["--requeue=expedite", "--no-requeue"])
    assert not expedited(["--requeue"]) and not expedited([])
    assert expedited(["--requeue", ":", "--requeue=expedite"])


def test_failed_expedited_chain_turns_requeue_off_before_exiting_non_zero(h):
    """Slurm requeues a failing expedited job held (REQUEUE_HOLD, forever): the supervisor
    sets Requeue=0 so the job ends FAILED."""
    failed = {"exits": {"n0": 1, "n1": 0}, "rc": 1, "heartbeat": "step 1"}
    assert h.run({"attempts": [failed, failed]}, request=EXPEDITE) is ExitCode.FAILED
    assert ["update", "JobId=500", "Requeue=0"] in h.commands("scontrol")


def test_failed_chain_without_expedite_leaves_requeue_alone(h):
    failed = {"exits": {"n0": 1, "n1": 0}, "rc": 1, "heartbeat": "step 1"}
    assert h.run({"attempts": [failed, failed]}) is ExitCode.FAILED
    assert not any(c[0] == "update" for c in h.commands("scontrol"))


@pytest.mark.parametrize("request_", [EXPEDITE, None])
def test_where_the_releaser_dies_with_the_job_a_fresh_job_carries_the_exclusions(h, request_):
    """proctrack/cgroup kills every process of the job, the detached releaser too: a requeue
    would lose the exclusions (and an expedited one would stay held), so the supervisor submits
    a fresh job with --exclude instead, on every version."""
    lost = {"exits": {"n0": 0}, "rc": 1}
    scenario = {"attempts": [lost], "bad_nodes": ["n1"], "proctrack": "proctrack/cgroup"}
    extra = {"request": request_} if request_ else {}
    assert h.run(scenario, **extra) is ExitCode.OK
    assert h.released == [] and not any("requeue" in c[0] for c in h.commands("scontrol"))
    (args,) = h.commands("sbatch")
    assert args[:3] == ["--parsable", "--dependency=afterany:500", "--exclude=n1"]
    rec = list(ledger.read(h.job_dir))[-1]
    assert rec["event"] == "resubmitted" and "proctrack/cgroup" in rec["reason"]


def test_under_cgroup_a_requeue_without_exclusions_stays_a_requeue(h):
    usr2 = {"signal_parent": "USR2", "exits": {"n0": 0, "n1": 0}, "rc": 0}
    scenario = {"attempts": [usr2], "proctrack": "proctrack/cgroup"}
    assert h.run(scenario, request=EXPEDITE) is ExitCode.OK
    assert ["requeue", "500"] in h.commands("scontrol") and h.commands("sbatch") == []
