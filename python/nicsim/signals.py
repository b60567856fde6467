"""Ctrl-C, SIGTERM and SIGHUP as exceptions, raised only where no library holds a lock.

`nicsim` turns SIGTERM into [`Terminated`] (Python turns Ctrl-C into KeyboardInterrupt), so that
the output folders under way are removed as the exception unwinds. An exception that a signal
handler raises can land anywhere, though. Inside `concurrent.futures.wait`, between taking the
futures' locks and the `with` that would give them back, it leaves a lock taken, and the pool's
manager thread then waits for it for ever (a sweep that hung after SIGTERM); inside a thread's
`join` it leaves that thread running while Python exits, to close its pipe under Python's own
exit hook (an EBADF traceback after "nicsim: terminated").

[`deferred`] holds those signals back for a block: the handler only notes the signal, and
[`Deferred.raise_pending`] raises it where the caller knows that nothing is half-done. Code
that waits on a pool waits in short slices and calls it between them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

#: Signals whose exceptions [`deferred`] holds back (when their handler is one that raises).
DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(SystemExit):
    """SIGTERM: unwinds like an exception, so that output folders under way are removed."""


def on_sigterm(signum: int, frame: Any) -> None:
    """The CLI's SIGTERM handler, and SIGHUP's (the terminal closed, an ssh session dropped: a
    pool's workers were left running and output under way was left behind)."""
    raise Terminated(128 + signum)


class Deferred:
    """The first signal that arrived in a [`deferred`] block, until it is raised."""

    def __init__(self) -> None:
        self.signum: int | None = None
        #: The handlers the block replaced, which [`raise_pending`] calls.
        self.handlers: dict[int, Any] = {}

    def note(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum = signum

    def raise_pending(self) -> None:
        """Run the replaced handler of a signal that arrived: it raises what the signal would
        have raised (KeyboardInterrupt, [`Terminated`])."""
        if self.signum is not None:
            signum, self.signum = self.signum, None
            self.handlers[signum](signum, None)


@contextlib.contextmanager
def deferred() -> Iterator[Deferred]:
    """Ctrl-C and SIGTERM noted instead of raised in the block (only their Python handlers are
    replaced: an ignored or default signal stays so). A signal noted and not yet raised is
    raised when the block ends, unless it ends by an exception, which is unwinding already.
    Outside the main thread, where handlers cannot be set, the block changes nothing."""
    d = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield d
        return
    d.handlers = {s: h for s in DEFERRED if callable(h := signal.getsignal(s))}
    for s in d.handlers:
        signal.signal(s, d.note)
    ok = False
    try:
        yield d
        ok = True
    finally:
        for s, handler in d.handlers.items():
            signal.signal(s, handler)
        if ok:
            d.raise_pending()


__all__ = ["Deferred", "Terminated", "deferred", "on_sigterm"]
