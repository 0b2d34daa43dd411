"""Stop signals during training: Ctrl-C (SIGINT) and SIGTERM, which cluster schedulers send
before they kill a job. The first signal asks the loop to stop after the current step (which then
saves a checkpoint and exits with a message); a second one interrupts at once."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def signal_name(signum: int) -> str:
    """"Ctrl-C" for SIGINT, else the signal's name ("SIGTERM")."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


@contextlib.contextmanager
def signals_request_stop(request_stop: Callable[[int], bool]) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM call ``request_stop(signum)``; when it returns False (a stop
    was already requested) the signal interrupts at once: KeyboardInterrupt for SIGINT, exit status
    143 (128 + SIGTERM) for SIGTERM. The previous handlers are restored on the way out. Outside the
    main thread nothing is installed (Python delivers signals to the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        if request_stop(signum):
            return
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
