"""docs/snrun.md's walk-through ("A failing job, from submit to diagnosis"), executed.

The commands are read from the document and run as written (job id, jobs dir and the
allocation's nodes substituted), and every output line the document shows is compared with
what the commands print: dates, durations, random folder names and the count of other failed
ranks (which varies with timing) are masked, and a documented line with ``...`` matches a
printed line holding its pieces in order. A change in
what snrun prints, or in the document, fails here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.helpers import ROOT, pythonpath, wait_final

pytestmark = pytest.mark.slurm

DOC = ROOT / "docs" / "snrun.md"
TITLE = "### A failing job, from submit to diagnosis"
DOC_JOB_ID, DOC_ROOT = "41", "/home/u/.snrun/jobs"


def walkthrough() -> list[tuple[str, list[str]]]:
    """(command, documented output lines) of the walk-through's code block."""
    block = DOC.read_text().split(TITLE, 1)[1].split("```", 2)[1]
    steps: list[tuple[str, list[str]]] = []
    for line in block.strip("\n").splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def mask(text: str) -> str:
    """What may differ between two runs of the same job, masked; spaces collapsed."""
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "DATE", text)
    text = re.sub(r"ranks_report\.py-\d{8}-\d{6}-[0-9a-f]{4}", "ranks_report.py-STAMP", text)
    text = re.sub(r"none_\w+", "none_X", text)
    text = re.sub(r"\(\+\d+ more ranks\)", "(+N more ranks)", text)
    text = re.sub(r"(?<![\w.])\d+\.\d(?![\w.])", "S", text)
    text = re.sub(r"job ids : [\d, ]+", "job ids : JOB", text)
    text = re.sub(r"^(\s*\d+\s+)\d+(\s+DATE)", r"\1JOB\2", text)  # a status row's job id
    return re.sub(r"[ \t]+", " ", text).strip()


def matches(documented: str, printed: list[str]) -> bool:
    want = mask(documented)
    if "..." not in want:
        return want in printed
    pieces = [p.strip() for p in want.split("...") if p.strip()]
    for line in printed:
        at = 0
        for piece in pieces:
            at = line.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            return True
    return False


def test_the_documented_walkthrough_prints_what_it_documents(slurm_cluster, tmp_path) -> None:
    steps = walkthrough()
    assert [c.split()[:2] for c, _ in steps][:3] == [["snrun", "-S"], ["snrun", "status"],
                                                    ["snrun", "logs"]]  # fmt: skip
    jobs = tmp_path / "jobs"
    env = os.environ | {"PYTHONPATH": pythonpath(), "SNRUN_SITE": "local",
                        "SNRUN_JOBS_DIR": str(jobs)}  # fmt: skip
    job_id, job_dir, rename = None, None, {}
    wrong: list[str] = []  # every difference, so one run shows them all

    def run(command: str, documented_names: bool = True) -> str:
        """What the command prints; with ``documented_names``, with the document's job root
        and node names (a job on the other super node: n4-n7 read as n0-n3)."""
        argv = shlex.split(command)
        assert argv[0] == "snrun", command
        argv = [str(job_id) if job_id is not None and a == DOC_JOB_ID else a for a in argv[1:]]
        proc = subprocess.run([sys.executable, "-m", "slurm_supernode", *argv], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=240)  # fmt: skip
        assert proc.returncode == 0, (command, proc.stderr)
        if not documented_names:
            return proc.stdout
        out = proc.stdout.replace(str(jobs), DOC_ROOT)
        for real, documented in rename.items():
            out = re.sub(rf"\b{real}\b", documented, out)
        return out

    for command, documented in steps:
        shown, _, jq = command.partition(" | jq ")
        out = run(shown)
        if job_id is None:  # the submission
            job_id = int(re.fullmatch(r"Submitted batch job (\d+)\n", out)[1])  # type: ignore[index]
            job_dir = (jobs / "by-id" / str(job_id)).resolve()
            assert wait_final(job_dir, 300)["state"] == "FAILED"
            hosts = json.loads((job_dir / "ledger.jsonl").read_text().splitlines()[0])["nodes"]
            if hosts == "n[4-7]":  # the other super node: name its nodes as the document does
                rename = {f"n{i + 4}": f"n{i}" for i in range(4)}
            continue
        if jq:
            path = re.fullmatch(r"'\.attempts\[(\d+)\]\.(\w+)'", jq.strip())
            assert path, jq
            got = json.loads(out)["attempts"][int(path[1])][path[2]]
            want = json.loads("\n".join(documented))
            for key in sorted(set(got) | set(want)):
                value, real = want.get(key), got.get(key)
                if key == "failed_ranks":  # how many wrote an error file varies with timing
                    ok = isinstance(real, int) and 1 < real <= 8
                elif isinstance(value, str) and "..." in value and isinstance(real, str):
                    ok = real.endswith(value.split("...")[-1])
                else:
                    ok = real == value
                if not ok:
                    wrong.append(f"$ {command}: {key} is {real!r}, documented {value!r}")
            # the files themselves: the paths as printed, before node names were renamed
            files = json.loads(run(shown, documented_names=False))["attempts"][int(path[1])][
                path[2]
            ]
            if (
                not Path(files["log"]).exists()
                or "bad learning rate" not in Path(files["error_file"]).read_text()
            ):
                wrong.append(f"$ {command}: the log or the error file is not where it says")
            continue
        printed = [mask(line) for line in out.splitlines()]
        missing = [line for line in documented if not matches(line, printed)]
        if missing:
            wrong.append(f"$ {command}\nnot printed: {missing}\nprinted:\n{out}")
    assert not wrong, "\n\n".join(wrong)
