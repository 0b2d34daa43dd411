"""`seqlab induction`: the short run separates one attention layer from two (an induction head
needs two), the results hold the logged numbers, and the campaign stops and resumes exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from seqlab.cli import main
from seqlab.induction import FAST, InductionSettings, run_induction
from seqlab.induction.figures import induction_figure
from seqlab.runs.checkpoint import read_checkpoint
from seqlab.runs.log import read_jsonl
from tests.conftest import held, wait_for_hold

pytestmark = pytest.mark.usefixtures("one_thread")
MODELS = ["attn1", "attn2", "mlp2", "lstm"]
# a few steps each: for the campaign's stop and resume, not for what the models learn
TINY = InductionSettings(vocab_size=8, half=4, min_repeat=2, d_model=16, num_heads=2, steps=12, lstm_steps=8,
                         batch_size=8, lr=1e-2, warmup_steps=2, eval_interval=6, eval_batches=1, distances=(2, 4),
                         distance_rows=8)


def _quiet(message: str) -> None:
    pass


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def fast(tmp_path_factory):
    out = tmp_path_factory.mktemp("induction") / "out"
    results = run_induction(out, fast=True, progress=False, say=_quiet)
    assert results["status"] == "completed"
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """An uninterrupted TINY experiment: the oracle of the resumed one, and a folder to refuse."""
    out = tmp_path_factory.mktemp("tiny") / "reference"
    assert run_induction(out, settings=TINY, progress=False, say=_quiet)["status"] == "completed"
    return out


def test_two_attention_layers_form_an_induction_head_and_one_layer_does_not(fast):
    models = _results(fast)["models"]
    assert list(models) == MODELS
    one, two = models["attn1"]["final"], models["attn2"]["final"]
    # the best last-layer head of each model, on random tokens repeated once
    assert two["induction"] > one["induction"] + 0.15, (one, two)
    assert two["in_context_loss"] < one["in_context_loss"]


def test_the_results_hold_the_logged_numbers_and_the_figure_draws_them(fast):
    results = _results(fast)
    for name in MODELS:
        record = results["models"][name]
        evals = [r for r in read_jsonl(fast / "runs" / name / "log.jsonl") if "in_context_loss" in r]
        steps = FAST.steps_of(name)
        every = list(range(FAST.eval_interval, steps + 1, FAST.eval_interval))
        assert record["curve"]["steps"] == every + ([steps] if steps % FAST.eval_interval else [])  # and the last
        assert record["curve"]["in_context_loss"] == [r["in_context_loss"] for r in evals]
        if name != "lstm":
            last = record["layers"] - 1
            assert record["curve"]["induction"] == [
                max(v for k, v in r.items() if k.startswith(f"heads/induction/L{last}H")) for r in evals]
        else:
            assert record["curve"]["induction"] == [None] * len(evals)
        assert sorted(record["by_distance"], key=int) == [str(d) for d in FAST.distances]
        assert all(0 <= v <= 1 for v in record["by_distance"].values())
        bump = record["bump"]
        drops = [a - b for a, b in zip(record["curve"]["in_context_loss"], record["curve"]["in_context_loss"][1:])]
        assert bump["loss_drop"] == max(drops)
    # --fast trains the attention models 300 steps, mlp2 and the LSTM 70: the JSON, the figure and
    # the report say so, and that only attn1 against attn2 compares architectures
    steps = {n: FAST.steps_of(n) for n in MODELS}
    assert steps == {"attn1": 300, "attn2": 300, "mlp2": 70, "lstm": 70}
    assert results["budgets"] == {"equal": False, "steps": steps, "note": (
        "The models trained for different numbers of steps: attn1 and attn2 300 steps; mlp2 and lstm 70 steps. A "
        "model trained for fewer steps may only be less trained, so where mlp2 and lstm do worse than a model "
        "trained longer, that says nothing about their architecture: compare models only at equal steps (attn1 "
        "and attn2; mlp2 and lstm).")}
    fig = induction_figure(results)
    loss_ax, score_ax, distance_ax = fig.axes
    assert [line.get_label() for line in loss_ax.get_lines()][:4] == [
        f"{results['models'][n]['label']} ({n}, {steps[n]} steps)" for n in MODELS]
    assert "Unequal budgets (300 steps vs 70 steps)" in fig._suptitle.get_text()
    assert len(score_ax.get_lines()) == 3  # the Transformers only
    assert list(score_ax.get_lines()[1].get_ydata()) == results["models"]["attn2"]["curve"]["induction"]
    assert "In-context loss" in loss_ax.get_title()
    assert (fast / "induction.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (fast / "report.md").read_text()
    assert "| 2-layer attention-only (`attn2`) |" in report and "induction.png" in report
    assert f"**Unequal budgets.** {results['budgets']['note']}" in report


def test_equal_budgets_say_nothing_and_one_model_trained_less_is_named():
    from seqlab.induction.report import write_report  # noqa: F401 (the reader of budgets, with the figure)
    from seqlab.induction.results import budgets

    models = {n: {"steps": 12} for n in MODELS}
    assert budgets({"models": models}) == {"equal": True, "steps": dict.fromkeys(MODELS, 12), "note": None}
    models["lstm"]["steps"] = 8
    note = budgets({"models": models})["note"]
    assert note.startswith("The models trained for different numbers of steps: attn1, attn2 and mlp2 12 steps; lstm "
                           "8 steps. A model trained for fewer steps may only be less trained, so where lstm does "
                           "worse than a model trained longer, that says nothing about its architecture: compare "
                           "models only at equal steps (attn1, attn2 and mlp2).")


def test_stopped_midway_and_rerun_gives_the_uninterrupted_experiment(tiny, tmp_path):
    reference = tiny
    out = tmp_path / "out"

    def stop_attn2_at_4(engine, step):
        if engine.config.out_dir.endswith("attn2") and step == 4:  # between two evaluations
            engine.request_stop("test stop")

    first = run_induction(out, settings=TINY, progress=False, say=_quiet, step_callbacks=[stop_attn2_at_4])
    assert first["status"] == "interrupted" and list(first["models"]) == ["attn1"]
    assert read_checkpoint(out / "runs" / "attn2" / "checkpoints" / "latest.pt")["iteration"] == 4
    assert not (out / "runs" / "mlp2").exists()  # nothing started after the stop
    attn1 = (out / "runs" / "attn1" / "checkpoints" / "latest.pt").stat().st_mtime_ns
    lines: list[str] = []
    second = run_induction(out, settings=TINY, progress=False, say=lines.append)
    assert second["status"] == "completed" and list(second["models"]) == MODELS
    assert any("1 of 4 models done earlier" in line for line in lines)
    assert any("attn2 (2-layer attention-only): resuming at step 4 of 12" in line for line in lines)
    assert (out / "runs" / "attn1" / "checkpoints" / "latest.pt").stat().st_mtime_ns == attn1  # not retrained
    expected = _results(reference)["models"]
    for name in MODELS:
        mine = {k: v for k, v in second["models"][name].items() if k != "train_seconds"}
        assert mine == {k: v for k, v in expected[name].items() if k != "train_seconds"}, name
        a = read_checkpoint(out / "runs" / name / "checkpoints" / "latest.pt")["model"]
        b = read_checkpoint(reference / "runs" / name / "checkpoints" / "latest.pt")["model"]
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name
    # a finished experiment run again trains nothing
    again: list[str] = []
    assert run_induction(out, settings=TINY, progress=False, say=again.append)["status"] == "completed"
    assert any("4 of 4 models done earlier" in line for line in again)


def test_the_command_refuses_a_foreign_folder_and_other_settings(tiny, tmp_path, capsys):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert main(["induction", "--out", str(foreign), "--fast", "--no-progress"]) == 1
    assert "is not a `seqlab induction` experiment's folder" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "mine" and sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    out = tmp_path / "out"
    shutil.copytree(tiny, out)
    before = (out / "results.json").read_text()
    with pytest.raises(FileExistsError, match="other settings"):
        run_induction(out, fast=True, progress=False, say=_quiet)
    assert (out / "results.json").read_text() == before  # nothing was touched
    afile = tmp_path / "file"
    afile.write_text("x")
    assert main(["induction", "--out", str(afile)]) == 2


@pytest.mark.slow
def test_sigterm_stops_the_command_with_143_and_a_rerun_finishes_it(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = tmp_path / "out"
    command = [sys.executable, "-m", "seqlab", "induction", "--fast", "--out", str(out), "--no-progress"]
    marker = tmp_path / "held"
    # held in the second model's first step (the first is done) until the signal has reached it
    process = subprocess.Popen(held(marker, "attn2", 1) + ["seqlab", *command[3:]], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_hold(process, marker)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 143, stderr[-3000:]
    assert (stdout + stderr).count("rerun the same command to continue") == 1
    saved = _results(out)
    assert saved["status"] == "interrupted" and saved["stop_signal"] == signal.SIGTERM
    assert list(saved["models"]) == ["attn1"] and not (out / "runs" / "mlp2").exists()
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert _results(out)["status"] == "completed" and list(_results(out)["models"]) == MODELS
