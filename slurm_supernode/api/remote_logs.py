"""``snrun logs -f`` across a connection that drops: the login node's follower is started
again and the lines already shown are skipped, so the reader sees each line once.

The remote ``snrun logs`` prints the same lines in the same order each time it starts (the
attempts' logs from the beginning), so the lines already delivered are a prefix of the new
output. With ``--tail`` that is not so; then the overlap may show again, which is said.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence

from slurm_supernode.remote import failures
from slurm_supernode.remote.ssh import Transport

RECONNECTS = 20  # attempts in a row without a line getting through, then give up
_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0)


def follow_lines(
    transport: Transport,
    argv: Sequence[str],
    *,
    reconnect: bool,
    say: Callable[[str], None] | None = None,
) -> Iterator[str]:
    """The remote command's stdout lines; with ``reconnect``, across dropped connections."""
    say = say or (lambda text: print(f"snrun logs: {text}", file=sys.stderr, flush=True))
    shown = 0
    failed = 0
    exact = "--tail" not in argv and not any(a.startswith("--tail=") for a in argv)
    while True:
        seen = 0
        try:
            for raw in transport.lines(argv):
                line = raw.decode(errors="replace").rstrip("\n")
                seen += 1
                if exact and seen <= shown:
                    continue
                shown += 1 if exact else 0
                failed = 0
                yield line
            return
        except failures.RemoteError as exc:
            again = exc.kind is failures.RemoteErrorKind.DROPPED or (
                failed and exc.kind is failures.RemoteErrorKind.UNREACHABLE
            )
            if not reconnect or not again:
                raise
            failed += 1
            if failed > RECONNECTS:
                raise
            wait = _BACKOFF_S[min(failed - 1, len(_BACKOFF_S) - 1)]
            overlap = "" if exact else " (with --tail, lines may show twice)"
            name = transport.cluster.name
            say(f"connection to {name} dropped; reconnecting in {wait:.0f} s{overlap}")
            time.sleep(wait)
