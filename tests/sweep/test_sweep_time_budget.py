"""A sweep whose runs stop on their time budget: each is recorded finished ("time budget" in its
sweep_outcome.json), a rerun trains none of them (also one killed between its end and its record),
and `seqlab compare` counts them finished."""

from __future__ import annotations

import json

import pytest

import seqlab.lm.task
from seqlab.cli import main
from tests.sweep.conftest import TINY_FLAGS
from tests.training.test_stop_status import ten_second_steps

pytest.importorskip("matplotlib")

NAMES = ["lr=0.01", "lr=0.03"]


def _refuse_training(monkeypatch) -> None:
    def train(config, **kwargs):
        raise AssertionError(f"{config.out_dir} trained again")

    monkeypatch.setattr(seqlab.lm.task, "train", train)


def test_time_budget_runs_are_finished_not_rerun_and_compared_as_finished(byte_data, tmp_path, monkeypatch, capsys):
    out = tmp_path / "lr"
    flags = ["sweep", "--data-dir", str(byte_data), "--out", str(out), "--grid", "lr=1e-2,3e-2", *TINY_FLAGS,
             "--max-steps", "1000", "--time-budget-s", "50"]
    results = ten_second_steps(monkeypatch, seqlab.lm.task)
    assert main(flags) == 0
    assert [(r.status.value, r.steps) for r in results] == [("time budget", 5)] * 2
    assert "2 runs (2 finished)" in capsys.readouterr().out
    for name in NAMES:
        outcome = json.loads((out / name / "sweep_outcome.json").read_text())
        assert (outcome["status"], outcome["reason"]) == ("time budget", "time budget")
    document = json.loads((out / "sweep.json").read_text())
    assert document["status"] == "completed"
    assert [(r["status"], r["reason"], r["steps"]) for r in document["runs"]] == [("finished", "time budget", 5)] * 2

    # a rerun trains nothing; nor after a kill between a run's end and its record (no outcome file)
    (out / NAMES[1] / "sweep_outcome.json").unlink()
    _refuse_training(monkeypatch)
    assert main(flags) == 0
    assert "2 runs (2 finished)" in capsys.readouterr().out
    outcome = json.loads((out / NAMES[1] / "sweep_outcome.json").read_text())
    assert (outcome["status"], outcome["reason"]) == ("time budget", "time budget")

    # seqlab compare: both finished, with why they stopped
    assert main(["compare", str(out), "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    for name in NAMES:
        assert f"{name}: finished, step 5, final val loss " in printed
    assert printed.count("(time budget)") == 2
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [r["status"] for r in compared["runs"]] == ["finished"] * 2


def test_outcome_words_old_and_new_read_as_the_record_status(tmp_path):
    """A run's Status word ("completed", "time budget") and the older "finished" are finished; a word
    the outcome file never holds ("interrupted") leaves the log to say (2 of 3 steps: unfinished)."""
    from seqlab.sweep.records import read_run, write_outcome
    from tests.test_outdir import _tiny_run

    expected = {"finished": ("finished", None), "completed": ("finished", None),
                "time budget": ("finished", "time budget"), "target reached": ("finished", "target reached"),
                "diverged": ("diverged", "loss rose"), "failed": ("failed", "out of memory"),
                "interrupted": ("unfinished", None)}
    for word, (status, reason) in expected.items():
        run = _tiny_run(tmp_path / word.replace(" ", "_"), [3.0, 2.0])
        config = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(json.dumps({**config, "max_steps": 3, "total_steps": 3}))  # log: 2 of 3
        said = reason if word not in ("finished", "completed", "interrupted") else None
        write_outcome(run, word, reason=said, peak_flops=None, device=None)
        record = read_run(run)
        assert (record.status, record.reason) == (status, reason), word
