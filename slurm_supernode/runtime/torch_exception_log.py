"""torchrun's failure log without torch's compiler imports.

When a worker fails, torchrun logs it with ``logger.exception``. torch's log formatter
(``TorchLogsFormatter``) formats any record that carries an exception after ``from torch._dynamo
import config``: the whole ``torch._dynamo`` package, with ``torch._inductor``, imported at that
moment (py-spy, torch 2.13). That is 2.5-3 s of CPU per torchrun on a quiet 2-core machine, and
33-36 s measured on the loaded 2-core minicluster with four agents failing at once: the failing
nodes' agents, and so the attempt, ended that much later than the others.

A filter on each of torch's handlers formats the traceback with ``logging``'s own formatter
(the one torch's inherits) before torch's formatter sees the record. The record then carries
the text and no exception object, and the line printed is the same. Records of torch's artifact
loggers (``graph_breaks`` and the like) are left to torch: it decides there whether a
traceback is printed at all. Run from ``fast_exit.py`` by path: standard library only.
"""

from __future__ import annotations

import logging

FORMATTER = "TorchLogsFormatter"


class FormattedException(logging.Filter):
    """Puts a record's traceback into ``exc_text`` and drops ``exc_info``."""

    def __init__(self) -> None:
        super().__init__()
        self._plain = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and not _is_artifact(record):
            if not record.exc_text:
                record.exc_text = self._plain.formatException(record.exc_info)
            record.exc_info = None
        return True


def _is_artifact(record: logging.LogRecord) -> bool:
    return getattr(logging.getLogger(record.name), "artifact_name", None) is not None


def torch_handlers() -> list[logging.Handler]:
    """Every handler, on any logger made so far, that formats with torch's formatter."""
    loggers = [logging.root] + [
        lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    return [h for lg in loggers for h in lg.handlers if type(h.formatter).__name__ == FORMATTER]


def install() -> int:
    """Add the filter to torch's handlers (once each); how many handlers have it now."""
    handlers = torch_handlers()
    for handler in handlers:
        if not any(isinstance(f, FormattedException) for f in handler.filters):
            handler.addFilter(FormattedException())
    return len(handlers)
