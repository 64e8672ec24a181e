"""`snrun remote ...` (hidden): what a laptop's `snrun --cluster` runs on the login node.

`remote have` / `remote put`: the shipped-code store (remote/store.py); `remote calls`: a JSON
list of verbs (argv lists) run one after the other in this process, their exit codes and
output as JSON: the generic path of the Python API (api/remote.py), one round trip for many.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "(over SSH) the login node's side of `snrun --cluster`; input on stdin"
    p.add_argument("action", choices=("have", "put", "calls", "info"))
    p.add_argument("--store", help="the code store (have, put)")


def run(ns: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from slurm_supernode.errors import InputError

    if ns.action == "calls":
        requests = json.loads(sys.stdin.read() or "[]")
        if not isinstance(requests, list) or not all(
            isinstance(r, list) and all(isinstance(w, str) for w in r) for r in requests
        ):
            raise InputError("stdin must be a JSON list of argv lists", where="snrun remote calls")
        print(json.dumps([_call(r) for r in requests]))
        return 0
    if ns.action == "info":
        from slurm_supernode.api.remote_store import login_info

        print(json.dumps(login_info()))
        return 0
    if not ns.store:
        raise InputError("--store is needed", where=f"snrun remote {ns.action}")
    from slurm_supernode.api.remote_store import store_have, store_put

    root = Path(ns.store).expanduser()
    answer = (
        store_have(root, sys.stdin.read())
        if ns.action == "have"
        else store_put(root, sys.stdin.buffer)
    )
    print(json.dumps(answer))
    return 0


def _call(argv: list[str]) -> dict[str, object]:
    """One verb, as `snrun ARGV` would run it, its output captured."""
    import contextlib
    import io

    from slurm_supernode.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}
