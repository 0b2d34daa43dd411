"""The signal helpers (seqlab/training/interrupt.py): one run's (the engine) and the one for commands
that train several runs in a row (``seqlab sweep`` and ``seqlab paths`` share it). Signals are sent
to this process and must end where the helper says."""

from __future__ import annotations

import ast
import os
import signal
from pathlib import Path

import pytest

from seqlab.training.interrupt import (
    StopRequest,
    signals_request_stop,
    signals_stop_runs,
)

SEQLAB = Path(__file__).resolve().parents[2] / "seqlab"


def test_first_signal_is_noted_the_second_quits_and_the_handlers_come_back():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    said: list[str] = []
    stop = StopRequest()
    with pytest.raises(KeyboardInterrupt):
        with signals_stop_runs(stop, said.append, "the sweep"):
            os.kill(os.getpid(), signal.SIGTERM)
            assert (stop.signal, stop.stopped, stop.exit_status) == (signal.SIGTERM, True, 143)
            assert said == ["SIGTERM: stopping the sweep: no further run starts (send it again to quit at once)"]
            os.kill(os.getpid(), signal.SIGINT)  # a second signal (here Ctrl-C) quits at once
    assert {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} == before


def test_a_second_sigterm_exits_143_and_a_second_ctrl_c_raises_keyboard_interrupt():
    for first, second, expected in ((signal.SIGINT, signal.SIGTERM, SystemExit), (signal.SIGTERM, signal.SIGINT, KeyboardInterrupt)):
        stop = StopRequest()
        with pytest.raises(expected) as caught:
            with signals_stop_runs(stop, lambda line: None, "the paths experiment"):
                os.kill(os.getpid(), first)
                assert stop.exit_status == 128 + first
                os.kill(os.getpid(), second)
        if expected is SystemExit:
            assert caught.value.code == 143


class _Engine:
    def __init__(self):
        self.reasons: list[str] = []

    def request_stop(self, reason: str) -> None:
        self.reasons.append(reason)


class _Result:
    def __init__(self, status: str, stop_signal: int | None):
        self.status, self.stop_signal = status, stop_signal


def test_stop_request_between_and_during_runs():
    stop = StopRequest()
    engine = _Engine()
    stop.engine_callback(engine, 1)
    assert engine.reasons == []  # no signal: the run goes on
    assert stop.note(_Result("completed", None)) is False and not stop.stopped
    # a signal while a run trains: the engine saw it and returns "interrupted" with it
    assert stop.note(_Result("interrupted", signal.SIGTERM)) is True
    assert (stop.signal, stop.exit_status) == (signal.SIGTERM, 143)
    stop.engine_callback(engine, 1)  # a run started anyway stops at its first step
    assert engine.reasons == ["interrupted (SIGTERM)"]
    # a stop asked by a step callback, without a signal: 130, as a shell reports Ctrl-C
    other = StopRequest()
    assert other.note(_Result("interrupted", None)) is True and other.exit_status == 130


def test_the_engine_helper_still_installs_and_restores_its_handler():
    calls: list[int] = []
    before = signal.getsignal(signal.SIGTERM)
    with signals_request_stop(lambda signum: calls.append(signum) or True):
        os.kill(os.getpid(), signal.SIGTERM)
    assert calls == [signal.SIGTERM] and signal.getsignal(signal.SIGTERM) == before


@pytest.mark.parametrize("module", ["sweep/runner.py", "seq2seq/paths/experiment.py", "training/campaign.py"])
def test_multi_run_commands_use_the_one_helper(module):
    """sweep and paths run through the campaign loop, which stops on signals through signals_stop_runs;
    none of them installs a handler of its own."""
    tree = ast.parse((SEQLAB / module).read_text(encoding="utf-8"))
    calls = {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
             for node in ast.walk(tree) if isinstance(node, ast.Call)}
    expected = "signals_stop_runs" if module == "training/campaign.py" else "Campaign"
    assert expected in calls and "signal" not in calls  # no signal.signal(...) here
    assert not [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and "signal" in node.name]
