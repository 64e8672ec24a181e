"""Bad command lines for every sub-command, written from the docs: exit 2, one line, a hint.

Each case runs ``main(argv)`` in-process (fast) and asserts: exit 2, exactly one line on
stderr of the form ``snrun[ SUB[ ACTION]]: error: ...``, the expected fragment, a hint, no
usage block and no traceback. A few run as real subprocesses at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.cli.main import main

ROOT = Path(__file__).resolve().parent.parent.parent
S = ["--site", "local", "--dry-run"]  # a submit that would otherwise be valid
P = ["plan", "--site", "local", "--nodelist", "n[0-3]"]
MODEL = ["--model", "llama-70b"]


def case(argv, prefix, fragment, id=None):
    return pytest.param(argv, prefix, fragment, id=id or " ".join(argv)[:60])


SUBMIT = [
    case([*S, "--tp", "0", "t.py"], "snrun", "--tp: must be >= 1, got 0"),
    case([*S, "--tp", "abc", "t.py"], "snrun", "--tp: must be a whole number, got 'abc'"),
    case([*S, "--tp", "1.5", "t.py"], "snrun", "--tp: must be a whole number"),
    case([*S, "--tp", "-2", "t.py"], "snrun", "--tp: must be >= 1, got -2"),
    case([*S, "--cp", "0", "t.py"], "snrun", "--cp: must be >= 1"),
    case([*S, "--ep", "0", "t.py"], "snrun", "--ep: must be >= 1"),
    case([*S, "--pp", "0", "t.py"], "snrun", "--pp: must be >= 1"),
    case([*S, "--tp", "99999999999", "t.py"], "snrun", "--tp: must be <= 1000000"),
    case([*S, "-S", "0", "t.py"], "snrun", "-S/--supernodes: must be >= 1, got 0"),
    case([*S, "-S", "two", "t.py"], "snrun", "-S/--supernodes: must be a whole number"),
    case([*S, "--supernodes=-1", "t.py"], "snrun", "-S/--supernodes: must be >= 1"),
    case([*S, "-N", "0", "t.py"], "snrun", "-N/--nodes: must be >= 1"),
    case([*S, "-N", "x", "t.py"], "snrun", "-N/--nodes: must be a whole number"),
    case([*S, "--nproc-per-node", "0", "t.py"], "snrun", "--nproc-per-node: must be >= 1"),
    case([*S, "--max-restarts", "-1", "t.py"], "snrun", "--max-restarts: must be >= 0, got -1"),
    case([*S, "--max-restarts", "x", "t.py"], "snrun", "--max-restarts: must be a whole number"),
    # the API's ranges (launch.jobspec.COUNTS), named by the options (the CLI skips check_spec)
    case([*S, "-S", "100001", "t.py"], "snrun", "-S/--supernodes: must be <= 100000"),
    case([*S, "-N", "1000001", "t.py"], "snrun", "-N/--nodes: must be <= 1000000"),
    case([*S, "--nproc-per-node", "1025", "t.py"], "snrun", "--nproc-per-node: must be <= 1024"),
    case([*S, "--max-restarts", "10001", "t.py"], "snrun", "--max-restarts: must be <= 10000"),
    case([*S, "--profile", "debug", "t.py"], "snrun", "--profile: renamed to --env-profile"),
    case([*S, "--block", "a=b.j2", "t.py"], "snrun", "--block: renamed to --template-block"),
    case([*S, "--template-block", "nameonly", "t.py"], "snrun", "--template-block: bad value"),
    case(["--site", "local", "--json", "t.py"], "snrun", "--json: only applies with --dry-run"),
    case([*S, "--bogus", "t.py"], "snrun", "unknown option --bogus"),
    case([*S, "--partiton", "x", "t.py"], "snrun", "did you mean --partition?"),
    case(S, "snrun", "no training script given"),
    case([*S, "-m"], "snrun", "-m: needs a value"),
    case([*S, "--tp"], "snrun", "--tp: needs a value"),
    case([*S, "-J"], "snrun", "-J/--job-name: needs a value"),
    case([*S, "--env", "1X=a", "t.py"], "snrun", "--env: bad value '1X=a'"),
    case([*S, "--env", "NOVALUE", "t.py"], "snrun", "--env: bad value 'NOVALUE'"),
    case([*S, "-t", "tomorrow", "t.py"], "snrun", "-t/--time: bad time limit 'tomorrow'"),
    case([*S, "-S", "1", "-N", "4", "t.py"], "snrun", "give either -S/--supernodes or -N/--nodes"),
    case([*S, "-S", "3", "t.py"], "snrun", "super node"),
    case([*S, "--env-profile", "nope", "t.py"], "snrun", "nope"),
]

# Values with a syntax (a module name, a job name, Slurm words and lists), refused by a dry run
# too: they could never work, however the script is written.
SYNTAX = [
    case([*S, "-m", "pkg.mod$(id)"], "snrun", "-m: module name 'pkg.mod$(id)' has a part"),
    case([*S, "-m", "pkg.mod;rm -rf x"], "snrun", "-m: module name"),
    case([*S, "-m", "`id`"], "snrun", "-m: module name '`id`' is not a Python name"),
    case([*S, "-m", ".relative"], "snrun", "has an empty part"),
    case([*S, "-m", "pkg."], "snrun", "has an empty part"),
    case([*S, "-m", "pkg..mod"], "snrun", "has an empty part"),
    case([*S, "-m", "1pkg.mod"], "snrun", "has a part that is not a Python name: '1pkg'"),
    case([*S, "-m", "my-pkg"], "snrun", "-m: module name 'my-pkg' is not a Python name"),
    case([*S, "-m", "pkg mod"], "snrun", "is not a Python name"),
    case([*S, "-m", "pkg/train"], "snrun", "is a file, not a module name"),
    case([*S, "-m", "train.py"], "snrun", "give the script without -m"),
    case([*S, "-m", ""], "snrun", "-m: module name '' is empty"),
    case([*S, "-m", "pkg.mod\n"], "snrun", "-m: module name"),
    case([*S, "-J", "a\nb", "t.py"], "snrun", "-J/--job-name: 'a\\nb' holds a control character"),
    case([*S, "--job-name", "x\ty", "t.py"], "snrun", "-J/--job-name: "),
    case([*S, "-J", " ", "t.py"], "snrun", "-J/--job-name: must not be empty"),
    case([*S, "-p", "a b", "t.py"], "snrun", "-p/--partition: 'a b' holds a space"),
    case([*S, "-p", "a,,b", "t.py"], "snrun", "empty partition name in 'a,,b'"),
    case([*S, "-p", "main\n", "t.py"], "snrun", "-p/--partition: "),
    case([*S, "-A", "proj,other", "t.py"], "snrun", "-A/--account: 'proj,other' holds ','"),
    case([*S, "-q", "high prio", "t.py"], "snrun", "-q/--qos: 'high prio' holds a space"),
    case([*S, "-q", "", "t.py"], "snrun", "-q/--qos: must not be empty"),
    case([*S, "-o", "out\n%j", "t.py"], "snrun", "-o/--output: "),
    case([*S, "-e", "", "t.py"], "snrun", "-e/--error: must not be empty"),
    case([*S, "--mail-type", "SOMETIMES", "t.py"], "snrun", "unknown mail type 'SOMETIMES'"),
    case([*S, "--mail-type", "END,,FAIL", "t.py"], "snrun", "--mail-type: unknown mail type ''"),
    case([*S, "--mail-user", "a b@x", "t.py"], "snrun", "--mail-user: 'a b@x' holds a space"),
    case([*S, "-d", "afterok", "t.py"], "snrun", "-d/--dependency: bad dependency 'afterok'"),
    case([*S, "-d", "afterok:12;id", "t.py"], "snrun", "bad dependency"),
    case([*S, "-d", "whenever:12", "t.py"], "snrun", "bad dependency 'whenever:12'"),
    case([*S, "-d", "afterok:x", "t.py"], "snrun", "bad dependency"),
]

# An option given explicitly that the request cannot honour: refused with why and what to use
# instead (a default may still adapt silently; the second list shows those pass).
INAPPLICABLE = [
    case([*S, "-m", "mod", "--fork-workers"], "snrun", "--fork-workers: forked workers are off"),
    case(
        [*S, "--fork-workers", "-m", "mod"],
        "snrun",
        "--fork-workers: forked workers are off for -m modules: torchrun",
    ),
    case([*S, "t.py", "--no-snapshot"], "snrun", "--no-snapshot: given after t.py, so it would"),
    case([*S, "t.py", "--lr", "1", "--env-profile", "x"], "snrun", "snrun --env-profile x t.py"),
    case([*S, "-m", "pkg.t", "--max-restarts=2"], "snrun", "--max-restarts: given after -m pkg.t"),
    case([*S, "t.py", "--preflight"], "snrun", "--preflight: given after t.py"),
    case([*S, "t.py", "--supernodes", "2"], "snrun", "--supernodes: given after t.py"),
    case([*S, "--parsable", "t.py"], "snrun", "--parsable: prints a job id, and --dry-run"),
    case([*S, "-W", "t.py"], "snrun", "-W/--wait: waits for the job, and --dry-run submits"),
    case([*S, "--wait", "--parsable", "t.py"], "snrun", "and --dry-run submits nothing"),
    case([*S, "--allow-partial", "t.py"], "snrun", "--allow-partial: keeps -N/--nodes exact"),
    case([*S, "-S", "1", "--allow-partial", "t.py"], "snrun", "--allow-partial: "),
    case([*S, "--framework", "torchtitan", "--etp", "2", "t.py"], "snrun", "--etp: torchtitan"),
    case([*P, "--framework", "torchtitan", "--tp", "2", "--etp", "4"], "snrun plan", "--etp: "),
    case([*P, "--top", "3"], "snrun plan", "--top: counts --recommend's layouts"),
    case([*P, "--top", "10"], "snrun plan", "--top: "),  # the default value, given explicitly
    case([*P, "--device-memory", "80"], "snrun plan", "--device-memory: checks a model's state"),
    case([*P, "--rank-table-version", "1.2"], "snrun plan", "--rank-table-version: is the ver"),
    case([*P, *MODEL, "--compute-time", "1", "--tflops", "900"], "snrun plan", "--tflops: "),
    case([*P, *MODEL, "--compute-time", "1", "--mfu", "0.5"], "snrun plan", "--mfu: scales"),
    case([*P, "--mfu", "0.4"], "snrun plan", "--mfu: "),
    case([*P, "--global-batch", "64"], "snrun plan", "--global-batch: is a setting of the model"),
    case([*P, "--sequence-parallel"], "snrun plan", "--sequence-parallel: "),
    case(["health", "--allreduce-nproc", "2"], "snrun health", "--allreduce-nproc: is a setting"),
    case(["health", "--allreduce-backend", "gloo"], "snrun health", "add --allreduce"),
    case(["health", "--timeout", "30"], "snrun health", "--timeout: is a setting of the all-red"),
    case(["doctor", "--facts", "f.json", "--iters", "3"], "snrun doctor", "--iters: is a setting"),
    case(["doctor", "--facts", "f.json", "-t", "1:00"], "snrun doctor", "-t/--time: is a setting"),
    case(["doctor", "--facts", "f.json", "--dry-run"], "snrun doctor", "--dry-run: is a setting"),
    case(["doctor", "--facts", "f.json", "--backend", "gloo"], "snrun doctor", "drop --backend"),
    case(["doctor", "--job", "5", "-p", "main"], "snrun doctor", "-p/--partition: is a setting"),
    case(["doctor", "--dry-run", "--json"], "snrun doctor", "--json: is about the report"),
    case(["doctor", "--dry-run", "--html", "x.html"], "snrun doctor", "--html: is about the rep"),
    case(["bench", "run", "--sizes", "1K,1M", "--factor", "4"], "snrun bench run", "--factor: "),
    case(["bench", "submit", "--dry-run", "--parsable"], "snrun bench submit", "--parsable: "),
    case(["bench", "submit", "--dry-run", "-W"], "snrun bench submit", "-W/--wait: waits for"),
    case(["bench", "schedule", "--list", "--sizes", "1K"], "snrun bench schedule", "--sizes: "),
    case(["bench", "schedule", "--list", "--mode", "chain"], "snrun bench schedule", "--mode: "),
    case(["bench", "schedule", "--remove", "x", "--run-now"], "snrun bench schedule", "--run-n"),
    case(["bench", "schedule", "--remove", "x", "--json"], "snrun bench schedule", "--json: "),
    case(["bench", "schedule", "--nightly", "02:00", "--json"], "snrun bench schedule", "--json"),
    case(["bench", "schedule", "--list", "-S", "2"], "snrun bench schedule", "-S: is a setting"),
    case(
        [*S, "--template-block", f"nope={ROOT}/README.md", "t.py"],
        "snrun",
        "unknown template block",
    ),
]

PLAN = [
    case([*P, "--tp", "0"], "snrun plan", "--tp: must be >= 1, got 0"),
    case([*P, "--tp", "abc"], "snrun plan", "--tp: must be a whole number, got 'abc'"),
    case([*P, "--cp", "0"], "snrun plan", "--cp: must be >= 1"),
    case([*P, "--ep", "-1"], "snrun plan", "--ep: must be >= 1"),
    case([*P, "--pp", "x"], "snrun plan", "--pp: must be a whole number"),
    case([*P, "--nproc-per-node", "0"], "snrun plan", "--nproc-per-node: must be >= 1"),
    case([*P, "--top", "0"], "snrun plan", "--top: must be >= 1"),
    case([*P, *MODEL, "--global-batch", "0"], "snrun plan", "--global-batch: must be >= 1"),
    case([*P, "--hidden", "0"], "snrun plan", "--hidden: must be >= 1"),
    case([*P, "--layers", "x"], "snrun plan", "--layers: must be a whole number"),
    case([*P, "--seq", "-1"], "snrun plan", "--seq: must be >= 1"),
    case([*P, *MODEL, "--micro-batch", "0"], "snrun plan", "--micro-batch: must be >= 1"),
    case([*P, "--dtype-bytes", "0"], "snrun plan", "--dtype-bytes: must be >= 1"),
    case([*P, "--dtype-bytes", "65"], "snrun plan", "--dtype-bytes: must be <= 64"),
    case([*P, "--experts", "0"], "snrun plan", "--experts: must be >= 1"),
    case([*P, "--topk", "0"], "snrun plan", "--topk: must be >= 1"),
    case([*P, "--params", "nan"], "snrun plan", "--params: must be a finite number, got 'nan'"),
    case([*P, "--params", "inf"], "snrun plan", "--params: must be a finite number"),
    case([*P, "--params", "0"], "snrun plan", "--params: must be > 0"),
    case([*P, "--params", "7e99"], "snrun plan", "--params: must be <= 1e+18"),
    case([*P, "--active-params", "-1"], "snrun plan", "--active-params: must be > 0"),
    case([*P, "--compute-time", "nan"], "snrun plan", "--compute-time: must be a finite number"),
    case([*P, "--compute-time", "0"], "snrun plan", "--compute-time: must be > 0"),
    case([*P, "--compute-time=-inf"], "snrun plan", "--compute-time: must be a finite"),
    case([*P, "--tflops", "inf"], "snrun plan", "--tflops: must be a finite number"),
    case([*P, "--tflops", "x"], "snrun plan", "--tflops: must be a number, got 'x'"),
    case([*P, "--mfu", "0"], "snrun plan", "--mfu: must be > 0"),
    case([*P, "--mfu", "1.5"], "snrun plan", "--mfu: must be <= 1"),
    case([*P, "--mfu", "NaN"], "snrun plan", "--mfu: must be a finite number"),
    case([*P, "--device-memory", "nan"], "snrun plan", "--device-memory: must be a finite"),
    case([*P, "--rank-table-version", "2.0"], "snrun plan", "unknown value '2.0'"),
    case([*P, "--model", "nope", "--compute-time", "1"], "snrun plan", "unknown model preset"),
    case([*P, "--recommend"], "snrun plan", "--model: the communication planner needs a model"),
    case([*P, "--hidden", "8"], "snrun plan", "a custom model needs"),
    case([*P, *MODEL, "--topk", "4", "--experts", "2"], "snrun plan", "--topk: 4 is more than"),
    case([*P, "--bogus"], "snrun plan", "unknown option --bogus"),
    case([*P, "--recomend"], "snrun plan", "did you mean --recommend?"),
    case(["plan", "--site", "local", "--nodelist"], "snrun plan", "--nodelist: needs a value"),
    case(["plan", "--site", "local", "--nodelist", "n[0-3"], "snrun plan", "missing ']'"),
    case(["plan", "--site", "local", "--nodelist", "n[0-3]&n1"], "snrun plan", "'&'"),
    case(["plan", "--site", "local", "--nodelist", "x[0-3]"], "snrun plan", "not in site 'local'"),
    case(["plan", "--site", "local"], "snrun plan", "--nodelist: no nodelist given"),
    case(["plan", "extra"], "snrun plan", "unexpected argument 'extra'"),
]

SITE = [
    case(["site"], "snrun site", "missing ACTION"),
    case(["site", "frob"], "snrun site", "unknown value 'frob'"),
    case(["site", "validate"], "snrun site validate", "missing FILE"),
    case(["site", "show"], "snrun site show", "missing FILE"),
    case(["site", "show", "local", "extra"], "snrun site", "unexpected argument 'extra'"),
    case(["site", "export", "local"], "snrun site export", "missing --format/-f"),
    case(["site", "export", "-f", "gres"], "snrun site export", "missing FILE"),
    case(["site", "export", "local", "-f", "nope"], "snrun site export", "unknown value 'nope'"),
    case(["site", "export", "local", "-f", "grse"], "snrun site export", "did you mean 'gres'?"),
    case(
        ["site", "export", "local", "-f", "slurm-nodes", "--node-port-base", "0"],
        "snrun site export",
        "--node-port-base: must be >= 1",
    ),
    case(
        ["site", "export", "local", "-f", "slurm-nodes", "--node-port-base", "70000"],
        "snrun site export",
        "--node-port-base: must be <= 65535",
    ),
    case(
        ["site", "export", "local", "-f", "slurm-nodes", "--node-port-base", "x"],
        "snrun site export",
        "--node-port-base: must be a whole number",
    ),
    case(
        ["site", "export", "local", "-f", "gres", "--node-port-base", "17000"],
        "snrun site export",
        "only applies to --format slurm-nodes",
    ),
    case(["site", "export", "local", "-f", "gres", "-o"], "snrun site export", "needs a value"),
    case(["site", "list", "--bogus"], "snrun site", "unknown option --bogus"),
    case(["site", "export", "nosuch", "-f", "gres"], "snrun site export", "unknown site 'nosuch'"),
]

STATUS_CANCEL = [
    case(["status", "-n", "0"], "snrun status", "-n/--last: must be >= 1"),
    case(["status", "1", "--bogus"], "snrun status", "unknown option --bogus"),
    case(["status", "1", "2"], "snrun status", "unexpected argument '2'"),
    case(["status", "1", "--jobs-dir"], "snrun status", "--jobs-dir: needs a value"),
    case(["cancel"], "snrun cancel", "missing JOB"),
    case(["cancel", "1", "--bogus"], "snrun cancel", "unknown option --bogus"),
    case(["cancel", "1", "--site"], "snrun cancel", "--site: needs a value"),
]

BENCH = [
    case(["bench"], "snrun bench", "missing ACTION"),
    case(["bench", "frob"], "snrun bench", "unknown value 'frob'"),
    case(["bench", "run", "--iters", "0"], "snrun bench run", "--iters: must be >= 1"),
    case(["bench", "run", "--iters", "x"], "snrun bench run", "--iters: must be a whole number"),
    case(["bench", "run", "--warmup", "-1"], "snrun bench run", "--warmup: must be >= 0"),
    case(["bench", "run", "--factor", "1"], "snrun bench run", "--factor: must be > 1"),
    case(["bench", "run", "--factor", "inf"], "snrun bench run", "--factor: must be a finite"),
    case(["bench", "run", "--factor", "nan"], "snrun bench run", "--factor: must be a finite"),
    case(["bench", "run", "--backend", "mpi"], "snrun bench run", "unknown value 'mpi'"),
    case(["bench", "run", "--timing", "x"], "snrun bench run", "unknown value 'x'"),
    case(["bench", "run", "--supernode-size", "0"], "snrun bench run", "--supernode-size: must"),
    case(["bench", "report", "--baseline-runs", "0"], "snrun bench report", "--baseline-runs"),
    case(["bench", "report", "--threshold", "0"], "snrun bench report", "--threshold: must be > 0"),
    case(["bench", "report", "--threshold", "100"], "snrun bench report", "must be < 100"),
    case(["bench", "report", "--threshold", "nan"], "snrun bench report", "must be a finite"),
    case(["bench", "submit", "-S", "0"], "snrun bench submit", "-S: must be >= 1"),
    case(["bench", "submit", "--iters", "0"], "snrun bench submit", "--iters: must be >= 1"),
    case(["bench", "submit", "--warmup", "-5"], "snrun bench submit", "--warmup: must be >= 0"),
    case(["bench", "submit", "--backend", "x"], "snrun bench submit", "unknown value 'x'"),
    case(["bench", "submit", "--nproc-per-node", "0"], "snrun bench submit", "must be >= 1"),
    case(["bench", "schedule"], "snrun bench schedule", "give one of --nightly"),
    case(["bench", "schedule", "--list", "--mode", "x"], "snrun bench schedule", "unknown value"),
    case(
        ["bench", "schedule", "--list", "--remove", "x"],
        "snrun bench schedule",
        "cannot be combined with --list",
    ),
]

HEALTH = [
    case(["health", "--expect-devices", "-1"], "snrun health", "--expect-devices: must be >= 0"),
    case(["health", "--min-free-gb", "-1"], "snrun health", "--min-free-gb: must be >= 0"),
    case(["health", "--min-free-gb", "nan"], "snrun health", "--min-free-gb: must be a finite"),
    case(["health", "--allreduce-nproc", "0"], "snrun health", "--allreduce-nproc: must be >= 1"),
    case(["health", "--timeout", "0"], "snrun health", "--timeout: must be > 0"),
    case(["health", "--timeout", "inf"], "snrun health", "--timeout: must be a finite number"),
    case(["health", "--allreduce-backend", "mpi"], "snrun health", "unknown value 'mpi'"),
    case(["health", "--drain", "--resume-ok"], "snrun health", "cannot be combined with --drain"),
    case(["health", "--path", "/tmp"], "snrun health", "--path: needs --min-free-gb"),
    case(["health", "--bogus"], "snrun health", "unknown option --bogus"),
]


def _outputs(tmp: Path) -> list:
    (tmp / "FILE").write_text("x\n")
    (tmp / "dir").mkdir()
    os.mkfifo(tmp / "fifo")
    targets = {
        "missing-dir": (tmp / "no" / "dir" / "out", "does not exist"),
        "parent-is-file": (tmp / "FILE" / "out", "FILE is a file, not a directory"),
        "is-directory": (tmp / "dir", "is a directory"),
        "fifo": (tmp / "fifo", "not a regular file"),
        "name-too-long": (tmp / ("o" * 300), "file name is too long"),
    }
    commands = {
        "site-export-o": lambda o: ["site", "export", "local", "-f", "gres", "-o", o],
        "plan-nccl-topo": lambda o: [*P, "--nccl-topo-file", o],
        "plan-rank-table": lambda o: [*P, "--hccl-rank-table", o],
        "bench-report-html": lambda o: ["bench", "report", "--db", str(tmp / "x.db"), "--html", o],
    }
    return [
        (f"{cmd}-{kind}", make(str(path)), frag)
        for cmd, make in commands.items()
        for kind, (path, frag) in targets.items()
    ]


OUTPUT_KINDS = [f"{c}-{k}" for c in ("site-export-o", "plan-nccl-topo", "plan-rank-table",
                                     "bench-report-html")
                for k in ("missing-dir", "parent-is-file", "is-directory", "fifo",
                          "name-too-long")]  # fmt: skip

CASES = SUBMIT + SYNTAX + INAPPLICABLE + PLAN + SITE + STATUS_CANCEL + BENCH + HEALTH


@pytest.fixture(autouse=True)
def _no_cluster(monkeypatch, tmp_path):
    """Nothing here may reach Slurm or write job directories outside tmp."""
    monkeypatch.setenv("SLURM_CONF", "/nonexistent/slurm.conf")
    monkeypatch.setenv("SNRUN_JOBS_DIR", str(tmp_path / "jobs"))
    monkeypatch.delenv("SNRUN_SITE", raising=False)
    monkeypatch.delenv("SNRUN_DEBUG", raising=False)
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)


def check_one_line(err: str, prefix: str, fragment: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"{prefix}: error: "), line
    assert fragment in line, (fragment, line)
    assert "(hint: " in line and line.endswith(")"), line
    assert "usage:" not in line.split("(hint:")[0] and "Traceback" not in line
    body = line.removeprefix(f"{prefix}: error: ")
    where = body.split(": ", 1)[0]
    if where.startswith("-"):  # no repeated wording: '--tp: --tp must ...'
        assert where not in body[len(where) :].split("(hint:")[0], line
    assert "_" not in where or not where.startswith("--"), f"internal name in {line}"
    return line


def test_corpus_is_large():
    assert len(CASES) + len(OUTPUT_KINDS) >= 130


@pytest.mark.parametrize(("argv", "prefix", "fragment"), CASES)
def test_bad_command_line(capsys, argv, prefix, fragment):
    assert main(argv) == 2
    out = capsys.readouterr()
    check_one_line(out.err, prefix, fragment)
    assert out.out == ""


@pytest.mark.parametrize("kind", OUTPUT_KINDS)
def test_bad_output_path(tmp_path, capsys, kind):
    cases = {name: (argv, frag) for name, argv, frag in _outputs(tmp_path)}
    argv, fragment = cases[kind]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(argv) == 2
    check_one_line(capsys.readouterr().err, "snrun " + " ".join(argv[:2]).split(" -")[0]
                   if argv[0] != "plan" else "snrun plan", fragment)  # fmt: skip
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing created


# -- arguments after SCRIPT belong to the script -----------------------------------------------
def _dry_run_command(capsys, argv) -> str:
    assert main(["--site", "local", "--dry-run", *argv]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    return next(line for line in out.splitlines() if " supervise --job-dir " in line)


def test_script_keeps_its_own_options(capsys):
    line = _dry_run_command(capsys, ["train.py", "--debug", "--lr", "0", "-x", "--data=a"])
    # the job runs the code snapshot: <job dir>/code/train.py
    assert "/code/train.py --debug --lr 0 -x --data=a" in line.split(" -- ", 1)[1]


def test_snrun_options_after_the_script_are_named_and_a_dry_run_there_refused(capsys):
    """`snrun train.py --nproc-per-node 1 --dry-run` must not submit a real job."""
    argv = ["--site", "local", "train.py", "--nproc-per-node", "1", "--dry-run"]
    assert main(argv) == 2
    line = check_one_line(capsys.readouterr().err, "snrun", "train.py: --nproc-per-node")
    assert "--dry-run after the script go to it, not to snrun: a real job would be" in line
    for argv, named in (
        (["train.py", "--lr", "1", "--nodes=4", "-N", "2"], "train.py: --nodes=4 -N after the"),
        (["-m", "pkg.train", "--time", "5"], "-m pkg.train: --time after the module"),
    ):
        assert main(["--site", "local", "--dry-run", *argv]) == 0
        err = capsys.readouterr().err
        assert f"snrun: warning: {named}" in err, err


def test_double_dash_gives_snrun_like_options_to_the_program(capsys):
    line = _dry_run_command(capsys, ["train.py", "--", "--nodes", "4", "--dry-run"])
    assert "/code/train.py -- --nodes 4 --dry-run" in line.split(" -- ", 1)[1]
    line = _dry_run_command(capsys, ["-m", "pkg.train", "--", "--time", "5"])
    assert line.split(" -- ", 1)[1].startswith("-m pkg.train -- --time 5")
    line = _dry_run_command(capsys, ["train.py", "--help"])  # the script's own help
    assert "/code/train.py --help" in line.split(" -- ", 1)[1]


def _all_parsers():
    import argparse

    from slurm_supernode.cli.main import SUBCOMMANDS, build_parser

    todo = [build_parser(name) for name in SUBCOMMANDS]
    while todo:
        parser = todo.pop()
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())


def test_every_parser_refuses_abbreviations():
    parsers = list(_all_parsers())
    assert len(parsers) > 13  # sub-commands and their actions
    assert [p.prog for p in parsers if p.allow_abbrev] == []


ABBREVIATED = [
    case([*S, "--dry", "t.py"], "snrun", "unknown option --dry"),
    case(["--site", "local", "--nproc-per-nod", "1", "t.py"], "snrun", "--nproc-per-node?"),
    case([*P, "--mod", "llama-70b"], "snrun plan", "unknown option --mod"),
    case(["site", "export", "local", "-f", "gres", "--out", "x"], "snrun site", "option --out"),
    case(["status", "1", "--js"], "snrun status", "unknown option --js"),
    case(["bench", "report", "--htm", "x.html"], "snrun bench", "unknown option --htm"),
]


@pytest.mark.parametrize(("argv", "prefix", "fragment"), ABBREVIATED)
def test_abbreviated_options_are_unknown(capsys, argv, prefix, fragment):
    assert main(argv) == 2
    check_one_line(capsys.readouterr().err, prefix, fragment)


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "pkg.train"],
        ["-m", "_private.__main__"],
        ["-m", "пакет.train"],  # Python names may be non-ASCII
        ["-d", "afterok:12:13,afterany:14_2+5", "t.py"],
        ["-d", "afterok:12?singleton", "t.py"],
        ["--mail-type", "end,FAIL,time_limit_90", "t.py"],
        ["-p", "main,debug", "-A", "proj-1", "-q", "high", "t.py"],
        ["-J", "my job (v2) $x", "-o", "logs/%x-%j.out", "t.py"],
    ],
)
def test_values_with_a_syntax_that_are_right_pass(capsys, argv):
    _dry_run_command(capsys, argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["--no-fork-workers", "-m", "pkg.train"],  # what -m does anyway: nothing to refuse
        ["-N", "2", "--allow-partial", "t.py"],
        ["t.py", "--", "--no-snapshot"],  # after '--' it is the program's, deliberately
        ["t.py", "--debug", "--tp", "2", "--json"],  # options a program may well have
        ["--framework", "torchtitan", "--tp", "2", "--etp", "2", "t.py"],
    ],
)
def test_options_that_apply_pass(capsys, argv):
    _dry_run_command(capsys, argv)


def test_defaults_that_cannot_apply_stay_silent(capsys):
    """--top and --mfu have defaults; --timeout too (health): left out, nothing is refused."""
    assert main([*P]) == 0
    assert main(["plan", "--site", "local", "--nodelist", "n[0-3]", *MODEL, "--compute-time",
                 "1"]) == 0  # fmt: skip
    capsys.readouterr()


def test_undefined_template_value_says_what_exists(tmp_path, capsys):
    tmpl = tmp_path / "mine.sh.j2"
    tmpl.write_text("#!/bin/bash\n# {{ job_name|comment }}\necho {{ job_dir }} {{ jobdir }}\n")
    assert main([*S, "--template", str(tmpl), "t.py"]) == 2
    line = check_one_line(capsys.readouterr().err, "snrun", f"{tmpl}:3: template uses an undefined")
    assert "'jobdir' is undefined" in line
    assert "job_dir, job_name" in line and "docs/snrun.md" in line
    block = tmp_path / "setup.j2"
    block.write_text("cd {{ workdir }}\n{{ site_name.nope }}\n")
    assert main([*S, "--template-block", f"setup={block}", "t.py"]) == 2
    line = check_one_line(capsys.readouterr().err, "snrun", f"{block}:2: template uses an undef")
    assert "has no attribute 'nope'" in line and "site_name" in line
    tmpl.write_text("{{ nodes / 0 }}\n")
    assert main([*S, "--template", str(tmpl), "t.py"]) == 2
    check_one_line(capsys.readouterr().err, "snrun", f"{tmpl}:1: template expression failed")


def test_module_with_arguments(capsys):
    line = _dry_run_command(capsys, ["-m", "pkg.train", "--lr", "3e-4", "--debug"])
    assert line.split(" -- ", 1)[1].startswith("-m pkg.train --lr 3e-4 --debug")


def test_double_dash_ends_snrun_options(capsys):
    line = _dry_run_command(capsys, ["--tp", "1", "--", "-odd.py", "x"])
    assert "/code/-odd.py x" in line.split(" -- ", 1)[1]


def test_debug_before_script_is_snruns(capsys):
    from slurm_supernode.errors import PlacementError

    with pytest.raises(PlacementError):  # --debug: the exception propagates (a traceback)
        main(["--debug", "--site", "local", "--dry-run", "--tp", "3", "t.py"])


def test_help_of_status_and_cancel_describes_every_option(capsys):
    from slurm_supernode.cli.main import build_parser

    for name in ("status", "cancel"):
        parser = build_parser(name)
        for action in parser._actions:
            assert action.help, (name, action.dest)
    help_text = " ".join(build_parser("submit").format_help().split())
    assert "not sbatch's -S/--core-spec" in help_text.replace("- ", "-")  # wrapped at '-'
    assert "--env-profile" in help_text and "--template-block" in help_text
    assert "--profile " not in help_text and "--block " not in help_text


# -- a few as real processes -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["plan", "--tp", "0"], "snrun plan: error: --tp: must be >= 1, got 0 (hint: "),
        (["--max-restarts", "-1", "t.py"], "snrun: error: --max-restarts: must be >= 0"),
        (["site", "export", "local", "-f", "gres", "-o", "/nonexistent/dir/out"], "does not exist"),
        (["site", "validate", "/dev/null/x.yaml"], "/dev/null is not a directory"),
    ],
)
def test_subprocess_one_line(argv, expected):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SLURM_CONF": "/nonexistent/slurm.conf"}
    env.pop("SNRUN_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "slurm_supernode", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert not Path("/nonexistent").exists()


# -- input files named on the command line -----------------------------------------------------
INPUT_KINDS = ["missing", "directory", "fifo", "parent-is-file", "name-too-long"]


@pytest.mark.parametrize("kind", INPUT_KINDS)
@pytest.mark.parametrize("option", ["--template-block", "--template"])
def test_bad_input_file(tmp_path, capsys, kind, option):
    (tmp_path / "FILE").write_text("x\n")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    path, fragment = {
        "missing": (tmp_path / "nope.j2", "no such file"),
        "directory": (tmp_path / "dir", "is a directory"),
        "fifo": (tmp_path / "fifo", "is a FIFO"),  # reading it would block for ever
        "parent-is-file": (tmp_path / "FILE" / "b.j2", "FILE is a file, not a directory"),
        "name-too-long": (tmp_path / ("b" * 300), "file name is too long"),
    }[kind]
    value = f"setup={path}" if option == "--template-block" else str(path)
    assert main([*S, option, value, "t.py"]) == 2
    line = check_one_line(capsys.readouterr().err, "snrun", f"{option}: ")
    assert fragment in line


def test_bad_results_database(tmp_path, capsys):
    assert main(["bench", "report", "--db", str(tmp_path)]) == 2
    check_one_line(capsys.readouterr().err, "snrun bench report", "--db: ")


def test_unforeseen_os_error_is_one_line(monkeypatch, capsys):
    """The safety net: an OSError no check foresaw is still one line, never a traceback."""
    import errno

    from slurm_supernode.cli import status

    def boom(ns):
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", "/x/FILE/y")

    monkeypatch.setattr(status, "run", boom)
    assert main(["status", "1"]) == 2
    check_one_line(capsys.readouterr().err, "snrun status", "/x/FILE/y: Not a directory")


def test_bench_env_profile_keeps_the_old_name_for_installed_schedules():
    from slurm_supernode.cli.bench_schedule import bench_job
    from slurm_supernode.cli.main import build_parser

    parser = build_parser("bench")
    assert parser.parse_args(["submit"]).profile == []
    ns = parser.parse_args(["submit", "--profile", "old", "--env-profile", "new"])
    assert bench_job(ns).profiles == ("old", "new")
