"""`seqlab paths` with a time budget: a model its time cap stops is recorded "time budget" in
results.json, the experiment completes, and the command exits 0."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from seqlab.cli import main
from seqlab.runs.status import Status
from seqlab.seq2seq.paths import experiment as experiment_module
from seqlab.seq2seq.task import Seq2SeqTask
from seqlab.training.engine import Engine
from tests.seq2seq.test_paths_faults import ARCHS, TINY

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.slow  # about 20 s: sizing three models, their evaluation and figures
def test_models_stopped_by_their_time_cap_are_recorded_time_budget(tmp_path, monkeypatch, capsys):
    clock = {"now": 1000.0}
    ended = []

    class TenSecondSteps(Engine):
        def train_step(self, step):
            out = super().train_step(step)
            clock["now"] += 10.0
            return out

    def train(config, *, step_callbacks=None, say=None):
        ended.append(TenSecondSteps(Seq2SeqTask(config), step_callbacks=step_callbacks,
                                    clock=lambda: clock["now"], say=say).run())
        return ended[-1]

    monkeypatch.setattr(experiment_module, "train", train)
    monkeypatch.setattr(experiment_module, "FULL", replace(TINY, budget_minutes=1.0))  # caps of 5 to 40 s
    out = tmp_path / "paths"
    assert main(["paths", "--out", str(out), "--tasks", "reverse", "--no-progress", "--threads", "1"]) == 0
    assert [r.status for r in ended] == [Status.TIME_BUDGET] * 3 and all(r.steps < TINY.symbol_steps for r in ended)
    results = json.loads((out / "results.json").read_text())
    assert results["status"] == "completed"
    archs = results["tasks"]["reverse"]["archs"]
    assert [(archs[a]["status"], archs[a]["steps"]) for a in ARCHS] == [("time budget", r.steps) for r in ended]
    report = (out / "report.md").read_text()
    assert "Unfinished" not in report and "Stopped by the time cap before their planned steps" in report
