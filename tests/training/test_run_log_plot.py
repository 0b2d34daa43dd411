"""loss_curve.png is drawn at the first evaluation, then at most once per PLOT_EVERY_S, and always at
the end with every evaluation in it (a drawing costs about 0.9 s: most of a small run's time)."""

from __future__ import annotations

import seqlab.training.run_log as run_log
from seqlab.training.run_log import RunLog


def _log(tmp_path, drawings):
    log = RunLog(tmp_path, {}, resume_step=None, plot_title="t")
    log._plot = lambda history, path, title: drawings.append([r["step"] for r in history if "val_loss" in r])
    return log


def test_evaluations_close_together_are_drawn_once_and_the_end_draws_them_all(tmp_path, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(run_log.time, "monotonic", lambda: now[0])
    drawings: list[list[int]] = []
    log = _log(tmp_path, drawings)
    for step in range(1, 6):
        log.write_eval({"step": step, "val_loss": 1.0 / step})
        now[0] += 1.0                          # 1 s between evaluations: under PLOT_EVERY_S
    assert drawings == [[1]]
    now[0] += run_log.PLOT_EVERY_S             # enough time has passed: the next evaluation is drawn
    log.write_eval({"step": 6, "val_loss": 0.1})
    assert drawings == [[1], [1, 2, 3, 4, 5, 6]]
    log.write_eval({"step": 7, "val_loss": 0.1})
    log.close()
    assert drawings[-1] == [1, 2, 3, 4, 5, 6, 7] and len(drawings) == 3


def test_nothing_new_since_the_last_drawing_is_not_drawn_again(tmp_path):
    drawings: list[list[int]] = []
    log = _log(tmp_path, drawings)
    log.write_eval({"step": 1, "val_loss": 1.0})
    log.write({"step": 2, "train_loss": 1.0})   # a train record alone changes no validation point
    log.close()
    assert drawings == [[1]]


def test_a_real_run_ends_with_its_curve_on_disk(tmp_path):
    log = RunLog(tmp_path, {}, resume_step=None, plot_title="a run")
    for step in (1, 2, 3):
        log.write({"step": step, "wallclock": float(step), "train_loss": 2.0 / step, "lr": 1e-3})
        log.write_eval({"step": step, "wallclock": float(step), "val_loss": 2.5 / step})
    log.close()
    assert (tmp_path / "loss_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
