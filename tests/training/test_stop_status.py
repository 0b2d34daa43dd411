"""A run that stops on its time budget or at its target metric ends with that :class:`Status`
(TIME_BUDGET, TARGET_REACHED), counts as finished, and its command exits 0 saying why it stopped."""

from __future__ import annotations

import json

from seqlab.cli import main
from seqlab.lm import task as lm_task
from seqlab.lm.task import Trainer
from seqlab.runs.log import read_jsonl
from seqlab.runs.status import Status
from tests.sweep.conftest import TINY_FLAGS


def ten_second_steps(monkeypatch, module=lm_task) -> list:
    """Make ``module.train`` train on a fake clock on which every optimizer step takes 10 s; returns
    the list each run's :class:`TrainResult` is appended to."""
    clock = {"now": 1000.0}
    results = []

    class TenSecondSteps(Trainer):
        def train_step(self, step):
            out = super().train_step(step)
            clock["now"] += 10.0
            return out

    def train(config, *, step_callbacks=None, say=None):
        results.append(TenSecondSteps(config, step_callbacks=step_callbacks, clock=lambda: clock["now"],
                                      say=say).run())
        return results[-1]

    monkeypatch.setattr(module, "train", train)
    return results


def test_seqlab_train_stopped_by_its_time_budget_exits_0_and_says_so(byte_data, tmp_path, monkeypatch, capsys):
    results = ten_second_steps(monkeypatch)
    run = tmp_path / "run"
    code = main(["train", "--data-dir", str(byte_data), "--out", str(run), *TINY_FLAGS, "--max-steps", "1000",
                 "--time-budget-s", "50"])
    (result,) = results
    assert (result.status, result.steps, result.stopped_by) == (Status.TIME_BUDGET, 5, "time budget")
    assert result.status is Status.TIME_BUDGET and result.status.finished
    assert code == 0 == result.exit_status  # a stop a --resume cannot continue is not an interruption
    out = capsys.readouterr().out
    assert "time budget spent at step 5/1000, " in out and "completed" not in out
    # the log ends with the evaluation of its last step, as an uninterrupted run's does
    assert [r["step"] for r in read_jsonl(run / "log.jsonl") if "val_loss" in r][-1] == 5


def test_a_seq2seq_run_reaching_its_target_exact_match_exits_0_with_target_reached(tmp_path, capsys):
    run = tmp_path / "reverse"
    code = main(["seq2seq", "train", "--task", "reverse", "--min-len", "2", "--max-len", "4", "--train-size", "200",
                 "--valid-size", "20", "--arch", "transformer", "--d-model", "32", "--num-heads", "2",
                 "--num-layers", "1", "--batch-size", "32", "--lr", "0.01", "--warmup-steps", "5", "--no-progress",
                 "--threads", "1", "--max-steps", "40", "--eval-interval", "5", "--eval-batches", "1",
                 "--target-exact-match", "0.01", "--out", str(run)])
    evals = [r for r in read_jsonl(run / "log.jsonl") if "val_exact_match" in r]
    stopped = evals[-1]["step"]
    assert code == 0 and stopped < 40 and evals[-1]["val_exact_match"] >= 0.01  # it stopped early, at its target
    assert all(r["val_exact_match"] < 0.01 for r in evals[:-1])
    out = capsys.readouterr().out
    assert f"target reached at step {stopped}/40, " in out and "completed" not in out
    assert json.loads((run / "config.json").read_text())["kind"] == "seq2seq"


def test_a_target_reached_result_is_finished_and_exits_0():
    from seqlab.training.result import TrainResult

    for status in (Status.TARGET_REACHED, Status.TIME_BUDGET, Status.COMPLETED):
        assert TrainResult("r", 3, 9, status).exit_status == 0
    assert TrainResult("r", 3, 9, Status.INTERRUPTED, stop_signal=15).exit_status == 143
