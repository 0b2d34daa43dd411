"""`seqlab compare` on runs made by `seqlab train` (of different lengths, one unfinished) and on a
sweep directory: the table, compare.json and the curves checked against each run's log.jsonl."""

from __future__ import annotations

import json
import shutil

import pytest

from seqlab.cli import main
from seqlab.sweep.figures import curves_figure, final_figure
from seqlab.sweep.records import read_run
from seqlab.sweep.report import compare_run_dirs, compare_runs
from seqlab.sweep.runner import plan_sweep, run_sweep
from seqlab.lm import train
from tests.sweep.conftest import tiny_base


def _losses(run_dir, key):
    records = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    return [(r["step"], r[key]) for r in records if key in r]


@pytest.fixture(scope="module")
def runs(byte_data, tmp_path_factory):
    """Three runs of `seqlab train`: 20 steps, 40 steps, and one stopped at step 7 of 20."""
    root = tmp_path_factory.mktemp("runs")
    train(tiny_base(byte_data, out_dir=str(root / "short"), max_steps=20))
    train(tiny_base(byte_data, out_dir=str(root / "long"), max_steps=40, lr=3e-2))

    def stop_at_7(trainer, step):
        if step == 7:
            trainer.request_stop("test")

    train(tiny_base(byte_data, out_dir=str(root / "cut"), max_steps=20), step_callbacks=[stop_at_7])
    return root


def test_compare_two_runs_of_different_lengths(runs, tmp_path):
    out = tmp_path / "cmp"
    records = compare_runs([runs / "short", runs / "long"], out)
    document = json.loads((out / "compare.json").read_text())
    rows = {r["name"]: r for r in document["runs"]}
    assert list(rows) == ["short", "long"]
    for name, steps in (("short", 20), ("long", 40)):
        vals = _losses(runs / name, "val_loss")
        assert rows[name]["status"] == "finished" and rows[name]["steps"] == rows[name]["total_steps"] == steps
        assert rows[name]["final_val_loss"] == vals[-1][1] and rows[name]["best_val_loss"] == min(v for _, v in vals)
        assert rows[name]["tokens"] == steps * 8 * 32
    assert document["best"] == min(rows.values(), key=lambda r: r["final_val_loss"])["name"]
    report = (out / "report.md").read_text()
    order = [line.split("`")[1] for line in report.splitlines() if line.startswith("| `")]
    assert order == sorted(rows, key=lambda n: rows[n]["final_val_loss"])
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not (out / "final.png").exists()
    # the figure: one line per run in each panel, at the logged steps and losses
    fig = curves_figure(records, title="t")
    (train_steps, train_time), (val_steps, val_time) = [fig.axes[i:i + 2] for i in (0, 2)]
    for axis, key in ((train_steps, "train_loss"), (val_steps, "val_loss")):
        lines = axis.get_lines()
        assert len(lines) == 2
        for line, name in zip(lines, ("short", "long")):
            assert list(zip(line.get_xdata(), line.get_ydata())) == _losses(runs / name, key)
    assert [line.get_label() for line in train_steps.get_lines()] == ["short", "long"]
    wallclock = [json.loads(line)["wallclock"] for line in (runs / "long" / "log.jsonl").read_text().splitlines()
                 if "train_loss" in line]
    assert list(train_time.get_lines()[1].get_xdata()) == pytest.approx(wallclock)  # seconds for short runs


def test_an_unfinished_run_and_a_sweep_directory(runs, byte_data, tmp_path, capsys):
    cut = read_run(runs / "cut")  # stopped (and saved) at step 7; its log's last record is step 5
    assert (cut.status, cut.steps, cut.total_steps) == ("unfinished", 5, 20)
    sweep = tmp_path / "sw"
    run_sweep(plan_sweep(tiny_base(byte_data, max_steps=6), sweep, grid=["lr=1e-2,3e-2"]), say=lambda line: None)
    found = compare_run_dirs([runs / "cut", sweep])
    assert [name for name, _ in found] == ["cut", "lr=0.01", "lr=0.03"]
    assert [path for _, path in found] == [runs / "cut", sweep / "lr=0.01", sweep / "lr=0.03"]
    assert main(["compare", str(runs / "cut"), str(sweep), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "cut: unfinished, step 5" in out and "lr=0.03: finished, step 6" in out
    assert "Not finished yet: `cut`" in (tmp_path / "cmp" / "report.md").read_text()
    # two runs with one directory name are told apart by their paths
    shutil.copytree(sweep / "lr=0.01", tmp_path / "copy" / "lr=0.01")
    pair = [str(sweep / "lr=0.01"), str(tmp_path / "copy" / "lr=0.01")]
    assert [name for name, _ in compare_run_dirs(pair)] == pair
    with pytest.raises(FileNotFoundError, match="nowhere does not exist; give the directory of a run"):
        compare_run_dirs([tmp_path / "nowhere"])
    assert main(["compare", str(tmp_path / "nowhere"), "--out", str(tmp_path / "c2")]) == 1
    assert "nowhere does not exist" in capsys.readouterr().err


def test_final_figure_marks_diverged_runs_and_uses_a_log_axis_for_learning_rates(runs):
    records = [read_run(runs / name, point={"lr": lr}) for name, lr in (("short", 1e-2), ("long", 3e-2))]
    diverged = read_run(runs / "cut", point={"lr": 3.0})
    diverged.status = "diverged"
    fig = final_figure([*records, diverged], ["lr"], title="t")
    (axis,) = fig.axes
    assert axis.get_xscale() == "log"
    line = axis.get_lines()[0]
    assert list(line.get_xdata()) == [1e-2, 3e-2]
    assert list(line.get_ydata()) == [r.final_val_loss for r in records]
    crosses = [l for l in axis.get_lines() if l.get_marker() == "x"]
    assert len(crosses) == 1 and list(crosses[0].get_xdata()) == [3.0]
    assert [t.get_text() for t in axis.texts] == ["diverged"]


def test_mfu_is_known_where_the_outcome_names_the_devices_peak(runs, tmp_path):
    import statistics

    from seqlab.accounting.costs import training_step_flops
    from seqlab.sweep.records import write_outcome

    run = tmp_path / "run"
    shutil.copytree(runs / "short", run)
    assert read_run(run).mfu is None  # a run of `seqlab train`: the device is not recorded
    write_outcome(run, "finished", reason=None, peak_flops=1e12, device="cuda:0")
    config = json.loads((run / "config.json").read_text())
    records = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    rate = statistics.median(r["tokens_per_second"] for r in records if "tokens_per_second" in r)
    per_token = training_step_flops(config["model"], 32, 1) / 32
    record = read_run(run)
    assert record.tokens_per_second == rate and record.mfu == pytest.approx(per_token * rate / 1e12)
