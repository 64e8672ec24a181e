"""What ssh is run with, and the one quoted line the login node's shell runs."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from slurm_supernode.remote.command import shell_line, ssh_argv
from slurm_supernode.remote.config import Cluster

NASTY = ["a b", "$(touch /tmp/pwned)", "`id`", "it's", '"q"', "x;y", "*", "~", "\\n", ""]


def test_every_word_is_quoted_and_comes_back_as_it_was(tmp_path):
    cluster = Cluster(
        "c",
        "h",
        snrun=("printf", "%s\\n"),
        env=(("K", "v w $HOME"),),
        path=(str(tmp_path / "a b"),),
    )
    line = shell_line(cluster, NASTY)
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:-1] == NASTY
    assert not Path("/tmp/pwned").exists()


def test_the_environment_there(tmp_path):
    cluster = Cluster(
        "c",
        "h",
        snrun=("sh", "-c", 'echo "$K|$SNRUN_SITE|$SNRUN_JOBS_DIR|$PATH|$SNRUN_CLUSTER."'),
        site="lab",
        jobs_dir="/j d",
        env=(("K", "$HOME"),),
        path=("/x y",),
    )
    line = shell_line(cluster, [])
    out = subprocess.run(
        ["sh", "-c", line],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "SNRUN_CLUSTER": "other"},
    ).stdout
    assert out.strip() == "$HOME|lab|/j d|/x y:/usr/bin:/bin|."


def test_ssh_shares_one_connection_and_ends_its_options(tmp_path):
    cluster = Cluster("c", "me@login", ssh_options=("-J", "gw"))
    argv = ssh_argv(cluster, "exec env snrun status", tmp_path, batch=True)
    assert argv[0] == "ssh" and argv[-3:] == ["--", "me@login", "exec env snrun status"]
    text = " ".join(argv)
    assert f"ControlPath={tmp_path}/%C" in text and "ControlMaster=auto" in text
    assert "ControlPersist=" in text and "BatchMode=yes" in text and "ServerAliveInterval" in text
    assert argv.index("-J") < argv.index("--")
    assert "-T" in argv and "-tt" not in argv
    assert "-tt" in ssh_argv(cluster, "x", tmp_path, tty=True, batch=False)
    assert "BatchMode=yes" not in " ".join(ssh_argv(cluster, "x", tmp_path, batch=False))


def test_the_snrun_command_is_split_once():
    cluster = Cluster("c", "h", snrun=("/opt/my env/bin/python", "-m", "slurm_supernode"))
    words = shlex.split(shell_line(cluster, ["status"]))
    assert words[-4:] == ["/opt/my env/bin/python", "-m", "slurm_supernode", "status"]
