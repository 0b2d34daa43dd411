"""`seqlab demo --fast`: the whole offline pipeline, from built-in text to a report with a sample."""

from __future__ import annotations

import math
import re

from seqlab.cli import main
from seqlab.training.logging_utils import read_jsonl


def test_demo_fast_writes_a_report(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--fast", "--out", str(out), "--no-progress"]) == 0
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
