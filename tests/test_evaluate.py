"""Evaluation: loss/perplexity over every token of a split, against a naive per-window loop."""

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqlab.cli import main
from seqlab.lm.evaluation import evaluate, window_starts
from seqlab.model import TransformerLM

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

def tiny_model(context_length=8, seed=0):
    torch.manual_seed(seed)
    return TransformerLM(vocab_size=29, context_length=context_length, d_model=32, num_layers=2,
                         num_heads=4, d_ff=48)


def naive_loss(model, data, n):
    """Oracle: one window at a time with torch.nn.functional.cross_entropy summed per token."""
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(data) - 1, n):
            chunk = torch.tensor(np.asarray(data[start:start + n + 1], dtype=np.int64))
            logits = model(chunk[None, :-1])[0]
            total += F.cross_entropy(logits.double(), chunk[1:], reduction="sum").item()
            count += len(chunk) - 1
    return total / count, count


@pytest.mark.parametrize("length,batch_size", [(8 * 5 + 1, 2), (100, 3), (9, 4), (50, 64)])
def test_matches_naive_per_window_loop(length, batch_size):
    model = tiny_model()
    data = np.random.default_rng(length).integers(0, 29, size=length).astype(np.uint16)
    expected, count = naive_loss(model, data, 8)
    result = evaluate(model, data, batch_size=batch_size)
    assert result.tokens == count == length - 1
    assert result.loss == pytest.approx(expected, rel=1e-5)
    assert result.perplexity == pytest.approx(math.exp(expected), rel=1e-5)
    assert result.windows == math.ceil((length - 1) / 8)


def test_windows_cover_every_target_once():
    starts = window_starts(30, 8)
    assert starts == [(0, 8), (8, 8), (16, 8), (24, 5)]
    targets = [i + 1 for s, n in starts for i in range(s, s + n)]
    assert targets == list(range(1, 30))


def test_shorter_context_and_memmap(tmp_path):
    model = tiny_model()
    data = np.random.default_rng(0).integers(0, 29, size=77).astype(np.int32)
    path = tmp_path / "valid.npy"
    np.save(path, data)
    mm = np.load(path, mmap_mode="r")
    expected, _ = naive_loss(model, data, 5)
    assert evaluate(model, mm, batch_size=4, context_length=5).loss == pytest.approx(expected, rel=1e-5)


def test_bad_ids_and_shapes_are_named():
    model = tiny_model()
    data = np.arange(40) % 29
    data[33] = 29
    with pytest.raises(ValueError, match="token id 29 at position 33"):
        evaluate(model, data, batch_size=2)
    with pytest.raises(ValueError, match="1-D"):
        evaluate(model, np.zeros((3, 4), dtype=np.int64))
    with pytest.raises(ValueError, match="at least 2"):
        evaluate(model, np.array([1]))


def test_cli_eval_on_a_checkpoint(tmp_path, capsys):
    from seqlab.training import save_checkpoint

    model = tiny_model()
    ckpt = tmp_path / "model.pt"
    save_checkpoint(model, None, 7, str(ckpt))
    data = np.random.default_rng(1).integers(0, 29, size=60).astype(np.uint16)
    np.save(tmp_path / "valid.npy", data)
    expected, _ = naive_loss(model, data, 8)
    assert main(["eval", "--checkpoint", str(ckpt), "--data", str(tmp_path / "valid.npy"),
                 "--batch-size", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["loss"] == pytest.approx(expected, rel=1e-5)
    assert out["tokens"] == 59

    run = tmp_path / "run"  # a run directory: RUN/checkpoints/latest.pt
    save_checkpoint(model, None, 9, str(run / "checkpoints" / "latest.pt"))
    assert main(["eval", "--run", str(run), "--data", str(tmp_path / "valid.npy")]) == 0
    assert f"perplexity {math.exp(expected):.3f}" in capsys.readouterr().out

    bad = data.copy()
    bad[10] = 500
    np.save(tmp_path / "bad.npy", bad)
    assert main(["eval", "--checkpoint", str(ckpt), "--data", str(tmp_path / "bad.npy")]) == 1
    assert "token id 500 at position 10" in capsys.readouterr().err
    assert main(["eval", "--checkpoint", str(tmp_path / "missing.pt"), "--data", "x.npy"]) == 1
