"""``seqlab seq2seq train|translate|eval``: end to end on tiny runs, SIGTERM saves, errors are clear."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqlab.cli import main
from seqlab.seq2seq.cli import heatmap_text
from tests.conftest import wait_until

pytestmark = pytest.mark.usefixtures("one_thread")
REPO = Path(__file__).resolve().parents[2]
TINY = ["--task", "reverse", "--min-len", "2", "--max-len", "5", "--train-size", "2000", "--valid-size", "60",
        "--eval-batches", "2", "--arch", "rnn-attention", "--d-model", "32", "--num-layers", "1", "--batch-size", "32",
        "--lr", "0.01", "--warmup-steps", "5", "--no-progress", "--threads", "1"]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_cli_module_imports_no_torch_and_help_lists_commands():
    code = ("import sys, seqlab.seq2seq.cli, seqlab.cli; p = seqlab.cli.build_parser(); "
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, env=_env())
    out = subprocess.run([sys.executable, "-m", "seqlab", "--help"], capture_output=True, text=True, env=_env())
    assert "seq2seq" in out.stdout and "paths" in out.stdout


def test_train_translate_eval(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["seq2seq", "train", *TINY, "--max-steps", "150", "--eval-interval", "150", "--out", str(run)]) == 0
    assert "completed at step 150" in capsys.readouterr().out
    # --resume keeps the saved settings and takes new flags (more steps)
    assert main(["seq2seq", "train", "--out", str(run), "--resume", "--max-steps", "160", "--eval-interval", "160",
                 "--no-progress"]) == 0
    assert "completed at step 160" in capsys.readouterr().out
    saved = json.loads((run / "config.json").read_text())["settings"]
    assert saved["task"] == "reverse" and saved["max_steps"] == 160 and saved["d_model"] == 32

    assert main(["seq2seq", "eval", "--run", str(run), "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    from seqlab.seq2seq import evaluate_translations, load_run
    from seqlab.seq2seq.data import load_pairs

    loaded = load_run(run, device="cpu")
    oracle = evaluate_translations(loaded.model, load_pairs(loaded.train_config)[1], loaded.src_vocab,
                                   loaded.tgt_vocab)
    assert numbers["exact_match"] == pytest.approx(oracle.exact_match) and numbers["pairs"] == 60
    assert numbers["bleu"] is None  # reverse is not a text task
    assert numbers["exact_match"] > 0.2

    assert main(["seq2seq", "translate", "--run", str(run), "abcd", "--show-attention"]) == 0
    lines = capsys.readouterr().out.splitlines()
    source, output = lines[0].split("\t")
    assert source == "abcd" and output == oracle_translation(loaded, "abcd")
    assert lines[1].strip() == "attention" and lines[2].split() == ["a", "b", "c", "d"]
    assert len(lines) == 3 + len(output) + 1 + 1  # one heatmap row per output token, one for EOS, the legend
    assert lines[-1].strip().startswith("shading (weight") and "'@'" in lines[-1]
    assert main(["seq2seq", "translate", "--run", str(run), "abcd", "--beam", "3"]) == 0
    assert capsys.readouterr().out.startswith("abcd\t")


def oracle_translation(loaded, text: str) -> str:
    """Greedy decoding written out as a loop of full forward passes (no cache)."""
    from seqlab.seq2seq.config import BOS_ID, EOS_ID

    src = torch.tensor([loaded.src_vocab.encode(text)])
    out = [BOS_ID]
    with torch.no_grad():
        for _ in range(20):
            token = int(loaded.model(src, torch.tensor([out]))[0, -1].argmax())
            if token == EOS_ID:
                break
            out.append(token)
    return loaded.tgt_vocab.decode(out[1:])


def test_heatmap_text_worked_example():
    text = heatmap_text([[0.0, 1.0], [0.5, 0.5]], ["x", "y"], ["a", "b"])
    assert text.splitlines() == ["   a  b", "x    @@", "y ++ ++"]


def test_errors_are_clear(tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("hello\tbonjour\nno tab\n", encoding="utf-8")
    assert main(["seq2seq", "train", "--pairs", str(bad), "--out", str(tmp_path / "r"), "--no-progress"]) == 1
    assert f"{bad}:2: no tab" in capsys.readouterr().err
    assert main(["seq2seq", "train", "--task", "dates", "--max-len", "3", "--out", str(tmp_path / "r")]) == 2
    assert "apply to the symbol tasks" in capsys.readouterr().err
    assert main(["seq2seq", "translate", "--run", str(tmp_path / "nothing"), "x"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["seq2seq", "train", "--resume", "--out", str(tmp_path / "nothing")]) == 1  # no run to read
    assert "nothing to resume" in capsys.readouterr().err


def test_sigterm_saves_and_resume_finishes(tmp_path):
    run = tmp_path / "run"
    command = [sys.executable, "-m", "seqlab", "seq2seq", "train", *TINY, "--max-steps", "100000",
               "--eval-interval", "100000", "--checkpoint-interval", "100000", "--out", str(run)]
    process = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        log = run / "log.jsonl"
        wait_until(process, lambda: log.is_file() and log.read_text().strip(), poll_s=0.2)  # a record every 10 steps
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, err  # 128 + SIGTERM, as `seqlab train` (issue 17)
    assert "SIGTERM: saving a checkpoint" in err and "interrupted" in out
    step = torch.load(run / "checkpoints/latest.pt", weights_only=True)["iteration"]
    assert step >= 10
    assert main(["seq2seq", "train", "--out", str(run), "--resume", "--max-steps", str(step + 5),
                 "--eval-interval", str(step + 5)]) == 0
    assert torch.load(run / "checkpoints/latest.pt", weights_only=True)["iteration"] == step + 5
