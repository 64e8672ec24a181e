"""Loaded by every rank of an snrun job (the agent puts this folder first on PYTHONPATH).

An uncaught exception is written to torchelastic's error file (``TORCHELASTIC_ERROR_FILE``,
set by torchrun for each worker) in the format of torch's ``@record``, unless the script's own
``@record`` wrote it already: ``snrun status`` then says the exception in words without reading
stderr. Then the next ``sitecustomize`` on the path (the system's, if any) runs as usual.
"""

import os
import sys


def _install() -> None:
    previous = sys.excepthook

    def hook(etype, value, tb):  # type: ignore[no-untyped-def]
        path = os.environ.get("TORCHELASTIC_ERROR_FILE")
        if path and not os.path.exists(path):
            try:
                import json
                import time
                import traceback

                data = {
                    "message": {
                        "message": f"{etype.__name__}: {value}",
                        "extraInfo": {
                            "py_callstack": "".join(traceback.format_exception(etype, value, tb)),
                            "timestamp": str(int(time.time())),
                        },
                    }
                }
                with open(path, "w") as fh:
                    json.dump(data, fh)
            except Exception:  # never mask the user's own error
                pass
        previous(etype, value, tb)

    sys.excepthook = hook


def _chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_install()
_chain()
