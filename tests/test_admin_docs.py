"""The admin's documents are executed: every command of docs/admin.md, docs/health.md,
docs/bench.md and docs/doctor.md (their ```sh / ```bash blocks) is either run here as written,
in a sandbox (the site folder, /etc/slurm, /usr/local/sbin and /var/www are folders of the
test; `snrun` is this checkout), or run on the cluster by a named integration test, or listed
with the reason it cannot run on a test machine (root-only services). A command added to a
document without a place here fails, and so does an snrun option a document names (in a
command, an inline `snrun ...` or a synopsis) that snrun's parser does not take.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.cli.main import SUBCOMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("admin", "health", "bench", "doctor")

# Commands run on the real cluster, by these tests.
ON_CLUSTER = {
    "snrun site export mysite --format health-check -o /usr/local/sbin/snrun-health-check":
        "tests/integration/test_health_check_program.py (slurmd runs it)",
    "scontrol reconfigure": "tests/integration/test_health_check_program.py",
    "snrun bench schedule --nightly 02:00": "tests/integration/test_admin_docs_cluster.py",
    "scontrol show topology | head": "tests/integration/test_admin_docs_cluster.py",
    "sbatch -N3 --wrap 'srun hostname'": "tests/integration/test_job_submit_cluster.py (-N3)",
    "sbatch -N9 --wrap true": "tests/integration/test_job_submit_cluster.py (-N9)",
    "srun -N4 --ntasks-per-node=1 snrun health --allreduce --container-image "
    "/shared/images/pt.sqsh --json": "tests/integration/test_containers.py (all-reduce in "
    "the test image through each runtime)",
    "snrun health --site /etc/snrun/sites/nvl72.yaml --drain --allreduce --timeout 20 "
    ">/dev/null": "tests/integration/test_ops_slurm.py (drain) and test_containers.py",
    "grep 'snrun job_submit: loaded' /var/log/slurm/slurmctld.log":
        "tests/integration/test_job_submit_cluster.py (the load line in slurmctld's log)",
}  # fmt: skip
# Commands a test machine cannot run as written, and why.
NOT_HERE = {
    "python3 -m pip install slurm-supernode": "installs into the test's python (make install)",
    "$EDITOR /etc/snrun/sites/mysite.yaml": "an editor (the sandbox writes name: mysite)",
    "systemctl restart slurmctld": "root-only service manager; the cluster tests restart "
    "their own daemons",
    "clush -w 'gb[001-072]' systemctl restart slurmd": "the site's compute nodes",
    "sudo contrib/minicluster/minicluster down": "the default cluster (tests never touch it)",
    "sudo contrib/minicluster/minicluster up --job-submit-lua": "as above; the tests boot "
    "their own with SNRUN_MC_JOB_SUBMIT_LUA=1",
    "export SLURM_CONF=/tmp/snrun-minicluster/etc/slurm.conf": "the default cluster",
}


def doc_commands(doc: str) -> list[str]:
    """Commands of the document's ```sh / ```bash blocks: `$ ` and comments dropped, lines
    continued with a backslash joined."""
    text = (ROOT / "docs" / f"{doc}.md").read_text()
    out: list[str] = []
    for body in re.findall(r"```(?:sh|bash)\n(.*?)```", text, re.S):
        body = body.replace("\\\n", " ")
        for line in body.splitlines():
            line = line.strip()
            line = line[2:] if line.startswith("$ ") else line
            if not line or line.startswith("#") or line.startswith(("cat >", "EOF")):
                continue
            if "#" in line:
                try:
                    words = shlex.split(line, comments=True)
                except ValueError:
                    words = None
                if words is not None and "'#" not in line:
                    line = line.split(" #", 1)[0].rstrip()
            out.append(re.sub(r"\s+", " ", line))
    return [c for c in out if not c.startswith(("rc=", "[", "case ", "exit ", "export SNRUN"))]


def all_commands() -> list[tuple[str, str]]:
    return [(doc, cmd) for doc in DOCS for cmd in doc_commands(doc)]


def snrun_argv(command: str) -> list[str] | None:
    """snrun's arguments in a command line (after `snrun`, up to a pipe or redirection)."""
    words = shlex.split(command)
    if "snrun" not in words:
        return None
    argv = words[words.index("snrun") + 1 :]
    for i, w in enumerate(argv):
        if w in ("|", "||", "&&", ">", ">>", ";") or w.startswith((">", "2>")):
            return argv[:i]
    return argv


def _parses(argv: list[str]) -> str | None:
    """None if snrun's parser takes ``argv``, else what it said."""
    if argv[:1] == ["--version"]:
        return None
    name = argv[0] if argv and argv[0] in SUBCOMMANDS else "submit"
    rest = argv[1:] if argv and argv[0] in SUBCOMMANDS else argv
    parser = build_parser(name)
    try:
        parser.parse_args(rest)
    except SystemExit as exc:
        return f"exit {exc.code}"
    except Exception as exc:
        return str(exc)
    return None


def test_every_documented_command_has_its_place() -> None:
    runs_here = {cmd for _, cmd in all_commands() if sandboxed(cmd) is not None}
    placed = runs_here | set(ON_CLUSTER) | set(NOT_HERE)
    missing = [f"{doc}: {cmd}" for doc, cmd in all_commands() if cmd not in placed]
    assert not missing, "documented commands no test runs:\n" + "\n".join(missing)
    stale = (set(ON_CLUSTER) | set(NOT_HERE)) - {cmd for _, cmd in all_commands()}
    assert not stale, f"listed here, no longer in the documents: {stale}"


def known_options(words: list[str]) -> tuple[str, set[str]]:
    """(verb, the options its parser and the named sub-action take) for ``snrun WORDS...``."""
    verb = words[0] if words and words[0] in SUBCOMMANDS else "submit"
    parser = build_parser(verb)
    known = {s for a in parser._actions for s in a.option_strings}
    for action in parser._actions:
        if isinstance(action.choices, dict):
            for name, sub in action.choices.items():
                if name in words[1:2]:
                    known |= {s for a in sub._actions for s in a.option_strings}
    return verb, known


OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[A-Za-z])(?![\w-])")


def test_every_documented_snrun_command_parses() -> None:
    """The four pages' commands parse whole; every other mention of `snrun ...` in any page
    (inline, a synopsis) names only options snrun takes."""
    bad = []
    for doc in DOCS:
        for command in doc_commands(doc):
            argv = snrun_argv(command)
            if argv and argv[0] in SUBCOMMANDS and (why := _parses(argv)):
                bad.append(f"{doc}.md: {command}: {why}")
    for path in sorted((ROOT / "docs").glob("*.md")):
        text = path.read_text()
        mentions = re.findall(r"`snrun ([^`\n]+)`", text)
        for body in re.findall(r"```\n(.*?)```", text, re.S):  # synopses
            mentions += re.findall(r"(?m)^\s*snrun (.*)", body.replace("\\\n", " "))
        for mention in mentions:
            words = mention.split()
            if words[:1] == ["--cluster"]:  # main()'s own: the verb runs there (docs/remote.md)
                words = words[2:]
                mention = " ".join(words)
            if not words or words[0] in ("job_submit:", "agent:", "health:"):
                continue  # a log line's prefix, not a command
            verb, known = known_options(words)
            known.add("--debug")  # main()'s own, before or after the verb
            own = mention.split("|| ")[0].split(" | ")[0]
            if verb in ("submit", "sweep"):  # the program's arguments follow the program
                own = re.split(r"\S+\.py\b|(?<=-m )\S+", own, maxsplit=1)[0]
            for opt in OPTION.findall(own):
                if opt not in known:
                    bad.append(f"{path.name}: snrun {mention}: {opt} is not an option of {verb}")
    assert not bad, "\n".join(bad)


def test_a_nonexistent_option_is_found() -> None:
    assert _parses(["bench", "report", "--site-config", "/etc/snrun/sites/x.yaml"])
    assert _parses(["bench", "report", "--site", "x"]) is None


# -- running the commands as written, in a sandbox ----------------------------------------------
def sandboxed(command: str) -> str | None:
    """The command with the machine's paths moved into the sandbox, or None if it is not run
    here (cluster, root or not a command of this machine)."""
    if command in ON_CLUSTER or command in NOT_HERE:
        return None
    first = command.split()[0]
    if first not in ("snrun", "install", "cp", "luac5.1", "chmod"):
        return None
    return command


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("admin-docs")
    folders = {p: tmp / p.strip("/").replace("/", "_") for p in
               ("/etc/snrun/sites", "/etc/slurm", "/usr/local/sbin", "/var/www/snrun")}  # fmt: skip
    for path in folders.values():
        if not path.name.endswith("sites"):
            path.mkdir(parents=True)
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    sites = folders["/etc/snrun/sites"]
    shim = bin_dir / "snrun_with_sandbox_sites.py"
    shim.write_text(
        "import pathlib, sys\n"
        "from slurm_supernode.site import finder\n"
        f"finder.SYSTEM_SITES_DIR = pathlib.Path({str(sites)!r})\n"
        "from slurm_supernode.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )  # the installed site folder is the sandbox's (as tests/site/test_loader.py does)
    (bin_dir / "snrun").write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(shim))} "$@"\n'
    )
    (bin_dir / "snrun").chmod(0o755)
    # the target Slurm of the exports: a Debian 13 controller host (24.11, topology/block)
    (bin_dir / "sinfo").write_text("#!/bin/sh\necho 'slurm 24.11.5'\n")
    (bin_dir / "sinfo").chmod(0o755)
    db = tmp / "bench.sqlite"
    from slurm_supernode.bench.store import open_store
    from tests.bench.helpers import make_run

    with open_store(db) as store:
        for i in range(3):
            store.add_run(make_run(1e9 + i, site="mysite", supernode="nvl72-01", nodes=18))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SNRUN_", "SLURM_"))}
    env |= {"PATH": f"{bin_dir}:{env['PATH']}", "PYTHONPATH": str(ROOT),
            "SNRUN_BENCH_DB": str(db), "HOME": str(tmp)}  # fmt: skip
    return {"tmp": str(tmp), **{k: str(v) for k, v in folders.items()}, "env": env}  # type: ignore[dict-item]


def _in_sandbox(command: str, box: dict) -> str:
    for real in ("/etc/snrun/sites", "/etc/slurm", "/usr/local/sbin", "/var/www/snrun"):
        command = command.replace(real, box[real])
    site_list = subprocess.run(["snrun", "site", "list"], capture_output=True, text=True,
                               env=box["env"]).stdout  # fmt: skip
    nvl72 = next(ln.split()[-1] for ln in site_list.splitlines() if ln.startswith("nvl72"))
    return command.replace("/path/from/site-list/nvl72.yaml", nvl72)


def test_admin_md_from_install_to_the_nightly_report_runs_as_written(sandbox) -> None:
    """Sections 1-8 of docs/admin.md in order, on the sandbox: every command exits 0 and
    writes what it says it writes."""
    ran = []
    for command in doc_commands("admin"):
        if sandboxed(command) is None:
            continue
        if command.startswith("luac5.1") and not shutil.which("luac5.1"):
            continue
        line = _in_sandbox(command, sandbox)
        proc = subprocess.run(["bash", "-c", line], capture_output=True, text=True,
                              env=sandbox["env"], timeout=300)  # fmt: skip
        assert proc.returncode == 0, f"{command}\n{proc.stderr}"
        ran.append(command)
        if command.startswith("cp "):  # the $EDITOR step: the copy is named after its file
            site = Path(sandbox["/etc/snrun/sites"]) / "mysite.yaml"
            site.write_text(re.sub(r"(?m)^name: .*$", "name: mysite", site.read_text(), count=1))
    assert any(c.startswith("snrun bench report --site mysite") for c in ran), ran
    etc = Path(sandbox["/etc/slurm"])
    assert {"nodes.conf", "gres.conf", "topology.conf", "job_submit.lua"} <= {
        p.name for p in etc.iterdir()
    }
    assert (Path(sandbox["/var/www/snrun"]) / "bench.html").read_text().startswith("<!DOCTYPE")


def test_the_other_pages_commands_run_as_written(sandbox) -> None:
    """health.md's export (a site file path) runs in the sandbox; the rest are placed above."""
    site = Path(sandbox["/etc/snrun/sites"])
    site.mkdir(exist_ok=True)
    shutil.copy(ROOT / "site-configs" / "nvl72.yaml", site / "nvl72.yaml")
    for doc in ("health", "bench", "doctor"):
        for command in doc_commands(doc):
            if sandboxed(command) is None:
                continue
            line = _in_sandbox(command, sandbox)
            proc = subprocess.run(["bash", "-c", line], capture_output=True, text=True,
                                  env=sandbox["env"], timeout=300)  # fmt: skip
            assert proc.returncode == 0, f"{doc}.md: {command}\n{proc.stderr}"
