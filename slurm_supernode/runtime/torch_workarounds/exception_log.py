"""torchrun's failure log without torch's compiler imports.

When a worker fails, torchrun logs it with ``logger.exception``. torch's log formatter
(``TorchLogsFormatter``) formats any record that carries an exception after ``from torch._dynamo
import config``: the whole ``torch._dynamo`` package, with ``torch._inductor``, imported at that
moment (py-spy, torch 2.13). That is 2.5-3 s of CPU per torchrun on a quiet 2-core machine, and
33-36 s measured on the loaded 2-core minicluster with four agents failing at once: the failing
nodes' agents, and so the attempt, ended that much later than the others.

Each of torch's handlers gets a formatter that puts the traceback into the record's
``exc_text`` with ``logging``'s own formatting (the one torch's inherits) and hands torch's
formatter the record without the exception object for that one call: the lines printed are
the same, and the record is given back as it came (``exc_text`` is ``logging``'s own cache),
so other handlers still see the exception. Records of torch's artifact loggers
(``graph_breaks`` and the like) are left to torch: it decides there whether a traceback is
printed at all. Run from ``fast_exit.py`` by path: standard library only.
"""

from __future__ import annotations

import logging

FORMATTER = "TorchLogsFormatter"


class PreformattedException(logging.Formatter):
    """torch's formatter, given records whose traceback is already text."""

    def __init__(self, torchs: logging.Formatter) -> None:
        super().__init__()
        self.torchs = torchs

    def format(self, record: logging.LogRecord) -> str:
        if not record.exc_info or _is_artifact(record):
            return self.torchs.format(record)
        if not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        exc_info, record.exc_info = record.exc_info, None
        try:
            return self.torchs.format(record)
        finally:
            record.exc_info = exc_info


def _is_artifact(record: logging.LogRecord) -> bool:
    return getattr(logging.getLogger(record.name), "artifact_name", None) is not None


def torch_handlers() -> list[logging.Handler]:
    """Every handler, on any logger made so far, that formats with torch's formatter (itself
    or wrapped here)."""
    loggers = [logging.root] + [
        lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    return [h for lg in loggers for h in lg.handlers if _torchs(h.formatter) is not None]


def _torchs(formatter: logging.Formatter | None) -> logging.Formatter | None:
    if isinstance(formatter, PreformattedException):
        formatter = formatter.torchs
    return formatter if type(formatter).__name__ == FORMATTER else None


def install() -> int:
    """Wrap the formatter of each of torch's handlers (once); how many handlers have it."""
    handlers = torch_handlers()
    for handler in handlers:
        if not isinstance(handler.formatter, PreformattedException):
            assert handler.formatter is not None
            handler.setFormatter(PreformattedException(handler.formatter))
    return len(handlers)
