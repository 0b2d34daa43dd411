"""Attention masks, softmax stability, multi-head and cross-attention against torch oracles."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqlab.labs.attention import (
    attention,
    causal_mask,
    cross_attention,
    init_multihead_params,
    masked_softmax,
    multihead_attention,
    padding_mask,
)


def _rand(seed, *shape):
    return np.random.default_rng(seed).normal(size=shape)


def test_masked_weights_are_exactly_zero_and_rows_sum_to_one():
    q, k, v = _rand(0, 4, 3), _rand(1, 4, 3), _rand(2, 4, 2)
    mask = causal_mask(4) & padding_mask(3, length=4)
    out = attention(q, k, v, mask)
    assert np.all(out["weights"][~mask] == 0.0)
    np.testing.assert_allclose(out["weights"].sum(axis=1), 1.0, atol=1e-15)
    assert out["fully_masked_rows"] == []
    ref = F.scaled_dot_product_attention(*(torch.tensor(a)[None] for a in (q, k, v)),
                                         attn_mask=torch.tensor(mask)[None])
    np.testing.assert_allclose(out["output"], ref[0].numpy(), atol=1e-13)


def test_fully_masked_row_returns_zeros_and_is_flagged_never_nan():
    q, k, v = _rand(0, 3, 2), _rand(1, 3, 2), _rand(2, 3, 2)
    mask = np.array([[True, False, False], [False, False, False], [True, True, True]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no divide-by-zero / invalid-value warnings either
        out = attention(q, k, v, mask)
    assert out["fully_masked_rows"] == [1]
    np.testing.assert_array_equal(out["weights"][1], 0.0)
    np.testing.assert_array_equal(out["output"][1], 0.0)
    assert np.isfinite(out["weights"]).all() and np.isfinite(out["output"]).all()


def test_softmax_is_stable_for_huge_scores():
    weights, _ = masked_softmax(np.array([[1000.0, 1001.0, -1e308]]))
    np.testing.assert_allclose(weights, [[1 / (1 + np.e), np.e / (1 + np.e), 0.0]], atol=1e-15)


def _first_output_ignores_future(mask) -> bool:
    """Change each future value/key and see whether the first position's output moves."""
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    first = attention(q, k, v, mask)["output"][0]
    for j in range(1, 4):
        k2, v2 = k.copy(), v.copy()
        k2[j] += 5.0
        v2[j] += 5.0
        if not np.array_equal(attention(q, k2, v2, mask)["output"][0], first):
            return False
    return True


def test_causal_first_output_never_sees_the_future_and_a_reversed_mask_is_caught():
    assert _first_output_ignores_future(causal_mask(4))
    assert not _first_output_ignores_future(causal_mask(4).T)     # deliberately reversed mask
    assert not _first_output_ignores_future(None)                 # no mask at all


def test_padding_mask_forms_and_errors():
    np.testing.assert_array_equal(padding_mask(2, length=4), [True, True, False, False])
    np.testing.assert_array_equal(padding_mask([True, False, True]), [True, False, True])
    assert padding_mask(1, length=3, num_queries=2).shape == (2, 3)
    with pytest.raises(ValueError, match="length"):
        padding_mask(2)
    with pytest.raises(ValueError, match="mask shape"):
        attention(_rand(0, 2, 2), _rand(1, 3, 2), _rand(2, 3), np.ones((3, 3), dtype=bool))


def _torch_mha(params, d_model, heads):
    mha = torch.nn.MultiheadAttention(d_model, heads, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.tensor(np.concatenate([params[n].T for n in ("Wq", "Wk", "Wv")])))
        mha.out_proj.weight.copy_(torch.tensor(params["Wo"].T))
    return mha


def test_multihead_self_attention_matches_torch():
    d_model, heads = 6, 3
    params = init_multihead_params(d_model, np.random.default_rng(4))
    x = _rand(5, 4, d_model)
    mask = causal_mask(4)
    out = multihead_attention(x, x, params, heads, mask)
    assert [h["output"].shape for h in out["heads"]] == [(4, 2)] * 3
    assert out["concat"].shape == (4, 6)
    tx = torch.tensor(x)[None]
    ref, _ = _torch_mha(params, d_model, heads)(tx, tx, tx, attn_mask=torch.tensor(~mask))  # torch: True = blocked
    np.testing.assert_allclose(out["output"], ref[0].detach().numpy(), atol=1e-13)


def test_cross_attention_is_rectangular_and_matches_torch():
    d_model, heads = 4, 2
    params = init_multihead_params(d_model, np.random.default_rng(6))
    target, source = _rand(7, 3, d_model), _rand(8, 5, d_model)
    valid = padding_mask(4, length=5)
    out = cross_attention(target, source, params, heads, valid)
    for head in out["heads"]:
        assert head["weights"].shape == (3, 5)
        np.testing.assert_array_equal(head["weights"][:, 4], 0.0)
    ref, _ = _torch_mha(params, d_model, heads)(torch.tensor(target)[None], torch.tensor(source)[None],
                                                torch.tensor(source)[None],
                                                key_padding_mask=torch.tensor(~valid)[None])
    np.testing.assert_allclose(out["output"], ref[0].detach().numpy(), atol=1e-13)
