"""The command line's start (cli/startup_cost.py): argparse without gettext says the same
words, any other use of gettext gets the real module, and the collector paused at the start
is running again before anything that can run long."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={
            "PYTHONPATH": str(ROOT),
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
        },
        timeout=120,
    )


ARGPARSE_ERRORS = """
import argparse, contextlib, io, sys
p = argparse.ArgumentParser(prog="x")
p.add_argument("--n", type=int, required=True)
p.add_argument("a", nargs=2)
for argv in (["--n", "q", "1", "2"], ["1"], ["--help"], ["--n", "1", "1", "2", "3"]):
    out = io.StringIO()
    with contextlib.suppress(SystemExit), contextlib.redirect_stderr(out), \\
            contextlib.redirect_stdout(out):
        p.parse_args(argv)
    print(out.getvalue())
"""


def test_argparse_says_the_same_without_gettext(tmp_path):
    plain = _python(ARGPARSE_ERRORS, tmp_path)
    spared = _python(
        "from slurm_supernode.cli.startup_cost import argparse_without_gettext\n"
        "argparse_without_gettext()\n"
        + ARGPARSE_ERRORS
        + "print('gettext' in sys.modules and type(sys.modules['gettext']).__name__)",
        tmp_path,
    )
    assert plain.returncode == spared.returncode == 0, spared.stderr
    assert "invalid int value: 'q'" in plain.stdout and "unrecognized arguments: 3" in plain.stdout
    words, _, kind = spared.stdout.rstrip("\n").rpartition("\n")
    assert words + "\n" == plain.stdout and kind == "_GettextForArgparse"


def test_any_other_use_of_gettext_gets_the_real_module(tmp_path):
    proc = _python(
        """
        import sys
        from slurm_supernode.cli.startup_cost import argparse_without_gettext
        argparse_without_gettext()
        import argparse, gettext
        t = gettext.NullTranslations()  # an attribute argparse does not use: the real one
        import gettext as again
        real = sys.modules["gettext"]
        print(type(t).__name__, again.find is real.find, hasattr(again, "GNUTranslations"))
        """,
        tmp_path,
    )
    assert proc.stdout.split() == ["NullTranslations", "True", "True"], proc.stderr


RECORD_GC = """
import gc, sys, types
from slurm_supernode.cli import main as cli_main
seen = []
verb = types.SimpleNamespace(
    add_arguments=lambda p: None, run=lambda ns: seen.append(gc.isenabled())
)
cli_main._load = lambda name: verb
sys.argv = ["snrun", "status"]
try:
    cli_main.entry()
finally:
    print("run saw the collector on:", seen)
"""


def test_a_verb_runs_with_the_collector_on(tmp_path):
    proc = _python(RECORD_GC, tmp_path)
    assert "run saw the collector on: [True]" in proc.stdout, proc.stderr


def test_a_submission_resumes_the_collector_once_planned_a_dry_run_does_not_need_to(tmp_path):
    site = ROOT / "site-configs" / "local.yaml"
    (tmp_path / "t.py").write_text("print('hello')\n")
    proc = _python(
        f"""
        import gc, sys
        import slurm_supernode.api.planning as planning
        import slurm_supernode.api.submission as submission
        plan = planning.plan
        planning.plan = lambda spec, need_slurm: plan(spec, need_slurm=False)  # no Slurm here
        def submit(plan, after=None):
            print("submit saw the collector on:", gc.isenabled())
            raise SystemExit(0)
        submission.submit = submit
        from slurm_supernode.cli.main import entry
        sys.argv = ["snrun", "--site", "{site}", "--jobs-dir", "{tmp_path}", "-S", "1", "t.py"]
        entry()
        """,
        tmp_path,
    )
    assert "submit saw the collector on: True" in proc.stdout, proc.stderr[-2000:]
    dry = _python(
        f"""
        import atexit, gc, sys
        atexit.register(lambda: print("dry run ended with the collector on:", gc.isenabled()))
        from slurm_supernode.cli.main import entry
        sys.argv = ["snrun", "--site", "{site}", "--jobs-dir", "{tmp_path}", "-S", "1",
                    "--dry-run", "t.py"]
        entry()
        """,
        tmp_path,
    )
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "dry run ended with the collector on: False" in dry.stdout
