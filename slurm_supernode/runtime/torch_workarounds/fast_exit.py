"""What the agent runs as torchrun: ``python fast_exit.py -m torch.distributed.run ARGS``.

torchrun's work is done once it has stopped its workers, written its error file and printed its
failure report; on a loaded node Python's teardown after that (the final garbage collection
over torch's objects, py-spy: ``gc_collect_main``) took 4.5-12 s on the 2-core minicluster, and
the step, so the next attempt, waited for it. This entry runs the module's ``main()`` as
torchrun's console script does, prints an uncaught exception as Python would (torchrun's
failure report is that traceback), runs the ``atexit`` handlers (logging's flush,
multiprocessing's clean-up) with every object frozen out of the collector's reach, flushes
stdout and stderr and leaves with ``os._exit`` and the exit code Python would have given.
Before ``main()`` it keeps torch's log formatter from importing torch's compiler when torchrun
logs a failed worker (``exception_log.py``: seconds to half a minute per failing node). Run by
path (also inside a job's container, where snrun is not installed): standard library only.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import importlib.util
import os
import signal
import sys
from types import ModuleType

USAGE = "usage: fast_exit.py -m MODULE [ARGS...]"
# Python's own exit for an uncaught KeyboardInterrupt: it dies of SIGINT
KILLED_BY_SIGINT = 128 + signal.SIGINT


def exit_code(exc: SystemExit) -> int:
    """The status Python gives ``SystemExit(code)``: None is 0, an int is itself, anything
    else is printed to stderr and gives 1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def python_m_path() -> None:
    """``sys.path`` as ``python -m`` gives it: the working directory first (forked workers
    import the script's modules from there), not this file's folder (snrun's runtime modules
    would shadow top-level names). With ``PYTHONSAFEPATH`` neither is added."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return
    if os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path[0] = os.getcwd()


def run(argv: list[str]) -> int:
    """Run ``MODULE.main()`` with ``sys.argv = [MODULE, *ARGS]``; its exit status."""
    if len(argv) < 2 or argv[0] != "-m":
        print(USAGE, file=sys.stderr)
        return 2
    module = argv[1]
    sys.argv = [module, *argv[2:]]
    python_m_path()
    try:
        main = importlib.import_module(module).main
        mark_started()
        torch_exception_log().install()  # torch's handlers exist once the module is imported
        result = main()
    except SystemExit as exc:
        return exit_code(exc)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        return KILLED_BY_SIGINT
    except BaseException:
        sys.excepthook(*sys.exc_info())
        return 1
    return exit_code(SystemExit(result))


STARTED_ENV = "SNRUN_CONTAINER_STARTED"  # launch/container_render.py sets it in a container


def mark_started() -> None:
    """In a container: torchrun imported, so the image starts (its python and torch work).
    The file tells the agent; before it, any failure is the container's (cause ``container``),
    after it the training's. Not passed on to the ranks."""
    path = os.environ.pop(STARTED_ENV, None)
    if path:
        with contextlib.suppress(OSError):
            open(path, "w").close()


def torch_exception_log() -> ModuleType:
    """``exception_log.py`` beside this file, loaded by path (this file runs by path, with
    the working directory, not its folder, on ``sys.path``)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exception_log.py")
    spec = importlib.util.spec_from_file_location("_snrun_torch_exception_log", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def leave(code: int) -> None:
    """Exit with ``code`` after the atexit handlers and a flush, skipping the interpreter's
    teardown (its final garbage collection)."""
    gc.freeze()  # nothing left for a collection during the atexit handlers to walk
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is not None:
        run_exitfuncs()  # prints a failing handler's traceback itself
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    if code == KILLED_BY_SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


if __name__ == "__main__":
    leave(run(sys.argv[1:]))
