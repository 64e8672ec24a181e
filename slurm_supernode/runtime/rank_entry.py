"""What a forked worker runs (``torchrun --run-path rank_entry.py SCRIPT ARGS``): the script,
with a failing rank's traceback printed to that rank's own stderr first.

In forked-worker mode torchrun runs the script inside its own wrapper, which catches the
exception and passes it to torchrun's summary only: the rank's ``stderr.log`` stays empty and
``snrun logs --rank R`` shows nothing for the rank that failed. Spawned workers print it
themselves (Python does at exit). Run by path, so it imports nothing of snrun.
"""

from __future__ import annotations

import runpy
import sys
import traceback


def main() -> None:
    sys.argv = sys.argv[1:]  # [SCRIPT, ARGS...]: what the script expects
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        raise


if __name__ == "__main__":
    main()
