"""Stop signals during training: Ctrl-C (SIGINT) and SIGTERM, which cluster schedulers send
before they kill a job. The first signal asks the loop to stop after the current step (which then
saves a checkpoint and exits with a message); a second one interrupts at once.

One run: :func:`signals_request_stop` (the engine). A command that trains several runs in a row
(``seqlab sweep``, ``seqlab paths``): :func:`signals_stop_runs` with a :class:`StopRequest`, so
that a signal stops the whole command (the run in progress saves its checkpoint, no other run
starts, exit status 130 or 143) instead of only the run in progress."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stopped_exit_status(signum: int | None) -> int:
    """The exit status of a command stopped early: 128 + the signal, as a shell reports one (130 for
    Ctrl-C, 143 for SIGTERM); 130 for a stop asked another way (a step callback's request)."""
    return 128 + signum if signum else 130


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


@dataclass
class StopRequest:
    """The stop request of a command that trains several runs one after another (``seqlab sweep``,
    ``seqlab paths``), filled in by :func:`signals_stop_runs`.

    A signal that comes while a run trains is handled by that run's engine (it saves a checkpoint
    and returns "interrupted" with the signal, which :meth:`note` records here); one that comes
    between runs (while the command evaluates a run or writes its figures) is noted here, and
    :meth:`engine_callback`, given to every run as a step callback, stops the next run at once
    should one start anyway. Either way the command starts no further run and exits with
    :attr:`exit_status`. Example::

        stop = StopRequest()
        with signals_stop_runs(stop, say, "the sweep"):
            for config in configs:
                if stop.signal is not None:
                    break
                result = train(config, step_callbacks=[stop.engine_callback])
                if stop.note(result):
                    break
        return stop.exit_status if stop.stopped else 0
    """

    signal: int | None = None   # the first SIGINT/SIGTERM
    stopped: bool = False       # a run was interrupted, by a signal or by a step callback's request

    def engine_callback(self, engine: object, step: int) -> None:
        """Step callback: after a signal noted between runs, the run stops at its first step."""
        if self.signal is not None:
            engine.request_stop(f"interrupted ({signal_name(self.signal)})")  # type: ignore[attr-defined]

    def note(self, result: object) -> bool:
        """Record a run's :class:`~seqlab.training.result.TrainResult`; True when it was interrupted
        (the command must stop)."""
        if getattr(result, "status", None) != "interrupted":
            return self.signal is not None
        self.stopped = True
        self.signal = self.signal or getattr(result, "stop_signal", None)
        return True

    @property
    def exit_status(self) -> int:
        """:func:`stopped_exit_status` of the signal (130 for SIGINT, 143 for SIGTERM)."""
        return stopped_exit_status(self.signal)


@contextlib.contextmanager
def signals_stop_runs(stop: StopRequest, say: Callable[[str], None], what: str) -> Iterator[StopRequest]:
    """While inside, the first SIGINT/SIGTERM is noted in ``stop`` and announced through ``say``;
    ``what`` names the command's work ("the sweep"). A second signal quits at once
    (KeyboardInterrupt, or exit status 143 for SIGTERM). While a run trains, its engine installs its
    own handlers (:func:`signals_request_stop`) and puts these back afterwards."""

    def request(signum: int) -> bool:
        if stop.signal is not None:
            return False
        stop.signal = signum
        stop.stopped = True
        say(f"{signal_name(signum)}: stopping {what}: no further run starts (send it again to quit at once)")
        return True

    with signals_request_stop(request):
        yield stop
