"""`seqlab demo --fast`: the whole offline pipeline, from built-in text to a report with a sample."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.runs.log import read_jsonl


def test_demo_fast_writes_a_report(tmp_path, capsys, monkeypatch):
    import seqlab.demo.pipeline as pipeline

    real_train = pipeline.train

    def train_naming_its_folder(config, say=None, **kwargs):  # what the engine says at a time budget's end
        result = real_train(config, say=say, **kwargs)
        (say or print)(f"time budget: saved {config.out_dir}/checkpoints/latest.pt at step 40")
        return result

    monkeypatch.setattr(pipeline, "train", train_naming_its_folder)
    out = tmp_path / "demo"
    assert main(["demo", "--fast", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr()
    assert ".tmp" not in printed.out + printed.err  # the final paths, never the folder it is built in
    assert f"saved {out / 'run'}/checkpoints/latest.pt" in printed.err
    report = (out / "report.md").read_text()
    assert "![loss curve](run/loss_curve.png)" in report and (out / "run" / "loss_curve.png").is_file()
    val_loss = float(re.search(r"final validation loss \| ([0-9.]+)", report).group(1))
    log = read_jsonl(out / "run" / "log.jsonl")
    assert val_loss == round([r["val_loss"] for r in log if "val_loss" in r][-1], 4)
    uniform = float(re.search(r"uniform-guess loss \| ([0-9.]+)", report).group(1))
    assert uniform == round(math.log(300), 4) and val_loss < uniform - 1.0  # it learned something
    assert re.search(r"training throughput \| [0-9,]+ tokens/s", report)
    sample = report.split("## Sample")[1].split("## Files")[0]
    assert "> Once upon a time" in sample and len(sample.split("> Once upon a time")[1].strip()) > 0
    for name in ("corpus/stories_train.txt", "data/train.npy", "data/tokenizer/vocab.json",
                 "run/checkpoints/latest.pt", "run/tokenizer/merges.txt", "run/config.json"):
        assert (out / name).is_file(), name


def test_demo_bad_arguments_are_clear_errors(tmp_path, capsys):
    assert main(["demo", "--minutes", "0", "--out", str(tmp_path / "d")]) == 2
    assert "--minutes must be > 0" in capsys.readouterr().err
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    assert main(["demo", "--fast", "--out", str(not_a_dir), "--no-progress"]) == 2
    assert f"--out {not_a_dir} exists and is not a directory" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_11_demo_refuses_an_existing_out_and_overwrite_swaps_it_in_whole(tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "report.md").write_text("an earlier demo\n")
    assert main(["demo", "--fast", "--out", str(out), "--no-progress"]) == 1  # not a demo's folder
    assert f"--out {str(out)!r} is not empty and was not written by `seqlab demo`" in capsys.readouterr().err
    assert (out / "report.md").read_text() == "an earlier demo\n"
    assert main(["demo", "--fast", "--out", str(out), "--no-progress", "--overwrite"]) == 0
    report = (out / "report.md").read_text()
    assert report.startswith("# seqlab demo report")
    assert sorted(os.listdir(out)) == [".seqlab-out.json", "corpus", "data", "report.md", "run"]
    assert sorted(os.listdir(tmp_path)) == ["demo"]  # nothing left beside it
    # the report names the final paths, explains the corpus and agrees with the learned vocabulary
    config = json.loads((out / "run" / "config.json").read_text())
    assert (config["settings"]["data_dir"], config["settings"]["out_dir"]) == (str(out / "data"), str(out / "run"))
    assert config["data"]["data_dir"] == str(out / "data")
    assert f"seqlab generate --run {out.as_posix()}/run" in report
    assert "generated from a small story grammar" in report and "not comparable to TinyStories" in report
    meta = json.loads((out / "data" / "meta.json").read_text())
    assert f"with a {meta['vocab_size']}-token BPE vocabulary" in report
    assert ("were asked for" in report) == (meta["vocab_size"] != 300)
    log = read_jsonl(out / "run" / "log.jsonl")
    window = [r for r in log if "train_loss" in r][-1]
    assert f"final train loss (mean of the last step) | {window['train_loss']:.4f}" in report


def test_11_the_demo_states_one_duration_everywhere(capsys):
    from seqlab.demo.pipeline import DEFAULT_MINUTES, FULL

    assert DEFAULT_MINUTES == 2.0 and FULL.max_steps >= 10_000  # the time budget, not the cap, ends it
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "about two minutes (--minutes)" in help_text and "(default: 2)" in help_text
    assert "two minutes on any machine" in readme and "5 minutes" not in readme
