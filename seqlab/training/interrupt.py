"""Ctrl-C during training: the first press asks the loop to stop after the current step (which
then saves a checkpoint); a second press interrupts at once."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def sigint_requests_stop(request_stop: Callable[[], bool]) -> Iterator[None]:
    """While inside, SIGINT calls ``request_stop()``; when it returns False (a stop was already
    requested) the press raises KeyboardInterrupt. Outside the main thread nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        if not request_stop():
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
