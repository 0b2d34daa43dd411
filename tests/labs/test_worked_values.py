"""The lecture's worked values, reproduced to 1e-9 by the lab functions the CLI and explorer call."""

import numpy as np
import pytest

from seqlab.labs.attention import attention, causal_mask, multihead_shapes
from seqlab.labs.clipping import clip_coordinatewise, clip_global_norm
from seqlab.labs.gru import gru_gate_step
from seqlab.labs.lstm import lstm_gate_step
from seqlab.labs.recurrence import repeated_factor, scalar_recurrence

TOL = 1e-9


def test_scalar_recurrence_states_and_reversed_inputs():
    states = scalar_recurrence(0.5, [1.0, 0.0, -1.0])
    np.testing.assert_allclose(states, [0.761594156, 0.363399484, -0.674143676], atol=1e-9)
    # oracle: the recurrence unrolled by hand with math.tanh
    import math
    h1 = math.tanh(1.0)
    h2 = math.tanh(0.5 * h1)
    h3 = math.tanh(0.5 * h2 - 1.0)
    np.testing.assert_allclose(states, [h1, h2, h3], atol=1e-15)
    reversed_states = scalar_recurrence(0.5, [-1.0, 0.0, 1.0])
    assert reversed_states[-1] == pytest.approx(0.674143676, abs=TOL)


def test_repeated_factors():
    assert repeated_factor(0.5, 10) == 0.0009765625
    assert repeated_factor(2.0, 10) == 1024.0
    assert repeated_factor(3.0, 0) == 1.0


def test_global_norm_clipping_keeps_direction():
    clipped, norm = clip_global_norm(np.array([3.0, 4.0]), 2.0)
    np.testing.assert_allclose(clipped, [1.2, 1.6], atol=TOL)
    assert norm == pytest.approx(5.0)
    # a list of arrays shares ONE scale factor computed from the global norm
    parts, norm = clip_global_norm([np.array([3.0]), np.array([4.0])], 2.0)
    np.testing.assert_allclose(np.concatenate(parts), [1.2, 1.6], atol=TOL)
    # below the threshold nothing changes
    same, _ = clip_global_norm(np.array([0.3, 0.4]), 2.0)
    np.testing.assert_array_equal(same, [0.3, 0.4])


def test_coordinatewise_clipping_is_a_different_rule():
    clipped = clip_coordinatewise(np.array([3.0, 4.0]), 2.0)
    np.testing.assert_array_equal(clipped, [2.0, 2.0])   # direction changed: not a rescaling
    global_clipped, _ = clip_global_norm(np.array([3.0, 4.0]), 2.0)
    assert not np.allclose(clipped, global_clipped)
    with pytest.raises(ValueError, match="threshold"):
        clip_coordinatewise(np.array([1.0]), 0.0)


def test_lstm_gate_step():
    step = lstm_gate_step(1.0, f=0.8, i=0.25, g=0.4, o=0.5)
    assert step["c"] == pytest.approx(0.9, abs=TOL)
    assert step["h"] == pytest.approx(0.3581489351, abs=TOL)
    assert step["retained"] == pytest.approx(0.8) and step["written"] == pytest.approx(0.1)
    kept = lstm_gate_step(1.0, f=1.0, i=0.0, g=0.4, o=0.5)
    assert kept["c"] == 1.0


def test_gru_gate_step_both_z_meanings():
    assert gru_gate_step(0.6, 0.75, -0.2) == pytest.approx(0.4, abs=TOL)
    # complement convention: z is the fraction of the candidate written
    assert gru_gate_step(0.6, 0.75, -0.2, z_keeps_old=False) == pytest.approx(0.25 * 0.6 + 0.75 * -0.2, abs=TOL)


def test_attention_worked_example():
    out = attention([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], [2.0, 10.0])
    np.testing.assert_allclose(out["scores"], [0.7071067812, 0.0], atol=1e-10)
    np.testing.assert_allclose(out["weights"], [0.6697615493, 0.3302384507], atol=1e-10)
    assert out["output"] == pytest.approx(4.6419076054, abs=1e-9)
    assert out["fully_masked_rows"] == []
    # oracle: torch's scaled_dot_product_attention
    import torch
    import torch.nn.functional as F
    ref = F.scaled_dot_product_attention(torch.tensor([[[1.0, 0.0]]], dtype=torch.float64),
                                         torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64),
                                         torch.tensor([[[2.0], [10.0]]], dtype=torch.float64))
    assert out["output"] == pytest.approx(ref.item(), abs=1e-12)


def test_attention_equal_scores_and_causal_first_position():
    equal = attention([1.0, 1.0], [[1.0, 0.0], [0.0, 1.0]], [2.0, 10.0])
    assert equal["output"] == pytest.approx(6.0, abs=TOL)
    causal = attention([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], [2.0, 10.0], causal_mask(2))
    np.testing.assert_array_equal(causal["weights"][0], [1.0, 0.0])
    assert causal["output"][0] == pytest.approx(2.0, abs=TOL)


def test_causal_mask_and_multihead_shapes():
    mask = causal_mask(3)
    assert mask.dtype == bool and int(mask.sum()) == 6
    np.testing.assert_array_equal(mask, np.tril(np.ones((3, 3), dtype=bool)))
    shapes = multihead_shapes(3, 4, 2)
    assert shapes["q"] == [3, 2] and shapes["k"] == [3, 2] and shapes["v"] == [3, 2]
    assert shapes["scores"] == [3, 3]
    assert shapes["head_output"] == [3, 2]
    assert shapes["concat"] == [3, 4]
    with pytest.raises(ValueError, match="divisible"):
        multihead_shapes(3, 5, 2)
