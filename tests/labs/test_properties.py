"""Property tests over random inputs (hypothesis): masks, softmax, clipping, shapes errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from seqlab.labs import rnn
from seqlab.labs.attention import attention
from seqlab.labs.clipping import clip_coordinatewise, clip_global_norm

finite = st.floats(-20, 20, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_any_mask_gives_zero_masked_weights_and_unit_rows(n, m, seed):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(n, 3)) * 5, rng.normal(size=(m, 3)) * 5, rng.normal(size=(m, 2))
    mask = rng.random((n, m)) < 0.6
    out = attention(q, k, v, mask)
    assert np.all(out["weights"][~mask] == 0.0)
    live = mask.any(axis=1)
    np.testing.assert_allclose(out["weights"][live].sum(axis=1), 1.0, atol=1e-12)
    assert out["fully_masked_rows"] == [int(i) for i in np.flatnonzero(~live)]
    assert np.all(out["output"][~live] == 0.0) and np.isfinite(out["output"]).all()


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 6), elements=finite), st.floats(0.01, 10))
def test_global_norm_clipping_caps_the_norm_and_keeps_direction(g, threshold):
    clipped, norm = clip_global_norm(g, threshold)
    assert norm == pytest.approx(np.linalg.norm(g), rel=1e-12, abs=1e-300)
    assert np.linalg.norm(clipped) <= threshold * (1 + 1e-12) or np.allclose(clipped, g)
    if norm > 0:   # a positive rescaling of g
        scale = np.linalg.norm(clipped) / norm
        np.testing.assert_allclose(clipped, g * scale, atol=1e-12)
    assert np.all(np.abs(clip_coordinatewise(g, threshold)) <= threshold)


def test_rnn_shape_errors_name_the_shape():
    params = rnn.init_rnn_params(3, 4, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"xs must have shape \(T, 3\), got \(5, 2\)"):
        rnn.rnn_forward(params, np.zeros((5, 2)))
    with pytest.raises(ValueError, match=r"h0 must have shape \(4,\)"):
        rnn.rnn_forward(params, np.zeros((5, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="targets shape"):
        rnn.softmax_cross_entropy(np.zeros((3, 2)), np.zeros(2, dtype=int))


def test_the_cross_entropy_of_a_target_whose_probability_underflows_is_finite():
    """The contract of softmax_cross_entropy promises finite results: a target 900 below its row's maximum has
    probability exp(-900), 0 in float64, and its loss is still 900 (plus exp(-897), far below a float's step)."""
    logits = np.array([[0.0, 900.0, 3.0], [2.0, 1.0, 0.0]])
    loss, dlogits, probs = rnn.softmax_cross_entropy(logits, np.array([0, 1]))
    second = math.log(math.exp(2.0) + math.exp(1.0) + 1.0) - 1.0
    assert loss == pytest.approx((900.0 + second) / 2, rel=1e-12)
    assert probs[0, 0] == 0.0 and np.isfinite(dlogits).all()
    np.testing.assert_allclose(dlogits[0], [-0.5, 0.5, 0.0], atol=1e-300)


def test_lstm_and_gru_shape_errors_name_the_state():
    from seqlab.labs import gru, lstm

    rng = np.random.default_rng(0)
    lstm_params, gru_params = lstm.init_lstm_params(3, 4, rng), gru.init_gru_params(3, 4, rng)
    with pytest.raises(ValueError, match=r"lstm: xs must have shape \(T, 3\), got \(5, 2\)"):
        lstm.lstm_forward(lstm_params, np.zeros((5, 2)))
    with pytest.raises(ValueError, match=r"lstm: c0 must have shape \(4,\), got \(2,\)"):
        lstm.lstm_forward(lstm_params, np.zeros((5, 3)), None, np.zeros(2))
    with pytest.raises(ValueError, match=r"gru: h0 must have shape \(4,\), got \(5,\)"):
        gru.gru_bptt(gru_params, np.zeros((5, 3)), np.zeros((5, 4)), np.zeros(5))
