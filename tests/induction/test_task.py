"""The repeated-tokens task of `seqlab induction`: the batches and the in-context metrics against
naive loops, and the attention-only, LSTM models it trains."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqlab.induction.task import LSTMLM, RepeatTrainConfig, in_context_metrics, repeat_batch


def test_each_example_ends_in_a_segment_repeated_once_at_its_own_distance():
    batch = repeat_batch(np.random.default_rng(0), 200, 8, 16, min_repeat=3)
    assert batch.shape == (200, 17)
    ids, distances = batch[:, :-1], batch[:, -1]
    assert set(distances.tolist()) == set(range(3, 9))  # every distance 3..8 is drawn
    for row, n in zip(ids.tolist(), distances.tolist()):
        assert row[16 - n:] == row[16 - 2 * n:16 - n]
    fixed = repeat_batch(np.random.default_rng(1), 4, 8, 16, distance=5)
    assert fixed[:, -1].tolist() == [5] * 4 and torch.equal(fixed[:, 11:16], fixed[:, 6:11])


def test_in_context_metrics_equal_a_naive_loop_over_positions():
    batch = repeat_batch(np.random.default_rng(2), 6, 8, 10, min_repeat=3)
    logits = torch.randn(6, 15, 10)
    metrics = in_context_metrics(logits, batch)
    before, copy, right = [], [], []
    for r in range(6):
        n = int(batch[r, -1])
        start = 16 - n  # the repeat's first position
        for j in range(15):  # logits[:, j] predicts the token at position j + 1
            loss = float(F.cross_entropy(logits[r, j][None], batch[r, j + 1][None]))
            if j + 1 < start:
                before.append(loss)
            elif j + 1 > start:
                copy.append(loss)
                right.append(int(logits[r, j].argmax()) == int(batch[r, j + 1]))
    assert float(metrics["loss_first_half"]) == pytest.approx(np.mean(before), rel=1e-5)
    assert float(metrics["loss_repeat"]) == pytest.approx(np.mean(copy), rel=1e-5)
    assert float(metrics["in_context_loss"]) == pytest.approx(np.mean(copy) - np.mean(before), rel=1e-5)
    assert float(metrics["repeat_accuracy"]) == pytest.approx(np.mean(right))


def test_the_lstm_lm_is_torchs_lstm_with_the_same_weights():
    torch.manual_seed(0)
    model = LSTMLM(12, 8)
    oracle = torch.nn.LSTM(8, 8, batch_first=True)
    cell = model.rnn.cells[0]
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(oracle, f"{name}_l0").copy_(getattr(cell, name))
    ids = torch.randint(0, 12, (3, 7))
    expected = oracle(model.token_embeddings(ids))[0] @ model.lm_head.weight.t()
    torch.testing.assert_close(model(ids), expected, atol=1e-5, rtol=1e-5)
    assert model(ids, return_hidden=True).shape == (3, 7, 8)


def test_settings_refuse_a_repeat_with_nothing_to_copy():
    with pytest.raises(ValueError, match="min_repeat=1: must be in 2..half"):
        RepeatTrainConfig(min_repeat=1, half=8)
    config = RepeatTrainConfig(half=8, min_repeat=3, num_layers=1, ffn="none", d_model=16, num_heads=2)
    model_config = config.model_config()
    assert (model_config.context_length, model_config.ffn, model_config.d_ff) == (16, "none", 0)
