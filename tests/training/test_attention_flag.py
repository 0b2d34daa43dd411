"""`seqlab train --attention sdpa` end to end (the backends themselves: tests/model/test_backend_dispatch.py)."""

import pytest

import seqlab.model.attention as attention_module

pytestmark = pytest.mark.usefixtures("one_thread")


def test_seqlab_train_with_sdpa_trains_as_the_reference(byte_data, tmp_path, monkeypatch):
    """Three steps of `seqlab train --attention sdpa` log the same losses as `--attention reference`."""
    from seqlab.cli import main
    from seqlab.runs.config import read_run_config
    from seqlab.runs.log import read_jsonl

    counts = {"sdpa": 0}
    original = attention_module.sdpa_attention
    monkeypatch.setattr(attention_module, "sdpa_attention",
                        lambda *a, **k: counts.__setitem__("sdpa", counts["sdpa"] + 1) or original(*a, **k))
    flags = ["--data-dir", str(byte_data), "--context-length", "16", "--d-model", "16", "--num-layers", "1",
             "--num-heads", "2", "--batch-size", "4", "--threads", "1", "--no-progress", "--eval-batches", "1",
             "--max-steps", "3", "--log-interval", "1", "--eval-interval", "3", "--seed", "5"]
    losses = {}
    for backend in ("sdpa", "reference"):
        run = tmp_path / backend
        assert main(["train", *flags, "--attention", backend, "--out-dir", str(run)]) == 0
        assert read_run_config(run).model["attention"] == backend
        losses[backend] = [r["train_loss"] for r in read_jsonl(run / "log.jsonl") if "train_loss" in r]
    assert counts["sdpa"] >= 3  # one layer, three training steps (and the evaluation)
    assert len(losses["sdpa"]) == 3
    assert losses["sdpa"] == pytest.approx(losses["reference"], abs=1e-5)
