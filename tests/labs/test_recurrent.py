"""RNN / LSTM / GRU / stacked / bidirectional against torch oracles and behavioural properties."""

import numpy as np
import pytest
import torch

from seqlab.labs import gru, lstm, rnn, stacked
from seqlab.labs.recurrence import scalar_recurrence, scalar_recurrence_backward

T64 = torch.float64


def _t(a, grad=False):
    return torch.tensor(np.asarray(a), dtype=T64, requires_grad=grad)


def _problem(seed=0, T=7, D=3, H=4, O=5):
    rng = np.random.default_rng(seed)
    params = rnn.init_rnn_params(D, H, O, rng, scale=1.0)
    return params, rng.normal(size=(T, D)), rng.normal(0, 0.5, H), rng.integers(0, O, T)


def test_full_bptt_matches_torch_autograd():
    params, xs, h0, targets = _problem()
    loss, grads = rnn.rnn_loss_and_grads(params, xs, targets, h0)
    tp = {k: _t(v, True) for k, v in params.items()}
    h, logits = _t(h0), []
    for x in _t(xs):
        h = torch.tanh(tp["Wh"] @ h + tp["Wx"] @ x + tp["b"])
        logits.append(tp["Wy"] @ h + tp["by"])
    ref = torch.nn.functional.cross_entropy(torch.stack(logits), torch.tensor(targets))
    ref.backward()
    assert loss == pytest.approx(ref.item(), abs=1e-12)
    for name in rnn.RNN_PARAMS:
        np.testing.assert_allclose(grads[name], tp[name].grad.numpy(), atol=1e-12)


def test_truncated_bptt_differs_from_full_and_from_reset():
    params, xs, h0, targets = _problem()
    full_loss, full = rnn.rnn_loss_and_grads(params, xs, targets, h0)
    trunc_loss, trunc, starts = rnn.truncated_bptt(params, xs, targets, h0, chunk_length=3)
    reset_loss, reset, _ = rnn.truncated_bptt(params, xs, targets, h0, chunk_length=3, carry_state=False)
    # carrying the state VALUE keeps the forward pass (and loss) identical to the full run ...
    assert trunc_loss == pytest.approx(full_loss, abs=1e-12)
    hs = rnn.rnn_forward(params, xs, h0)["hs"]
    np.testing.assert_allclose(starts[1], hs[2], atol=1e-15)
    # ... but the gradient stops at chunk boundaries, so it differs from full BPTT
    assert np.abs(trunc["Wh"] - full["Wh"]).max() > 1e-4
    # resetting changes the forward pass itself
    assert abs(reset_loss - full_loss) > 1e-4
    assert np.abs(reset["Wh"] - trunc["Wh"]).max() > 1e-4
    # the output layer sees the same states in full and truncated runs: identical gradients there
    np.testing.assert_allclose(trunc["Wy"], full["Wy"], atol=1e-14)
    # a chunk as long as the sequence is exactly full BPTT
    _, whole, _ = rnn.truncated_bptt(params, xs, targets, h0, chunk_length=len(xs))
    for name in rnn.RNN_PARAMS:
        np.testing.assert_allclose(whole[name], full[name], atol=1e-14)


@pytest.mark.parametrize("chunk_length,loss_step", [(3, 5), (3, 6), (2, 0), (4, 3), (7, 6)])
def test_truncated_bptt_reach_matches_the_gradients(chunk_length, loss_step):
    params, xs, h0, targets = _problem()
    _, grads, _ = rnn.truncated_bptt(params, xs, targets, h0, chunk_length, loss_steps=[loss_step])
    reached = [t for t in range(len(xs)) if np.any(grads["xs"][t] != 0)]
    assert rnn.truncated_bptt_reach(len(xs), chunk_length, loss_step) == reached
    with pytest.raises(ValueError, match="loss_step"):
        rnn.truncated_bptt_reach(5, 2, 5)


def test_scalar_recurrence_gradient_is_the_product_of_factors():
    xs = np.array([0.2, -0.1, 0.4, 0.3])
    a = 0.5
    g = scalar_recurrence_backward(a, xs)
    hs = scalar_recurrence(a, xs)
    np.testing.assert_allclose(g["h0"], np.prod(a * (1 - hs ** 2)), rtol=1e-14)


def _torch_cell(cell_class, params, D, H):
    """A float64 torch.nn.LSTMCell / GRUCell holding the lab's stacked maps (same gate order)."""
    cell = cell_class(D, H).double()
    with torch.no_grad():
        for name, key in (("weight_ih", "Wx"), ("weight_hh", "Wh"), ("bias_ih", "bx"), ("bias_hh", "bh")):
            getattr(cell, name).copy_(_t(params[key]))
    return cell


def test_lstm_matches_torch_lstm_cell_and_counts():
    rng = np.random.default_rng(1)
    D, H = 3, 5
    params = lstm.init_lstm_params(D, H, rng, scale=1.0)
    xs = rng.normal(size=(6, D))
    cell = _torch_cell(torch.nn.LSTMCell, params, D, H)
    out = lstm.lstm_forward(params, xs)
    h = c = torch.zeros(1, H, dtype=T64)
    for t, x in enumerate(_t(xs)):
        h, c = cell(x[None], (h, c))
        np.testing.assert_allclose(out["hs"][t], h[0].detach().numpy(), atol=1e-13)
        np.testing.assert_allclose(out["cs"][t], c[0].detach().numpy(), atol=1e-13)
    torch_count = sum(p.numel() for p in cell.parameters())
    assert lstm.lstm_parameter_count(D, H) == torch_count == 4 * (H * D + H * H + 2 * H)


def test_pytorch_convention_gru_matches_torch_gru_cell():
    rng = np.random.default_rng(2)
    D, H = 3, 4
    params = gru.init_gru_params(D, H, rng, scale=1.0)
    params["bh"] += rng.normal(0, 0.5, 3 * H)    # a sizeable recurrent bias: it sits inside r * (.)
    xs = rng.normal(size=(6, D))
    cell = _torch_cell(torch.nn.GRUCell, params, D, H)
    ours = gru.gru_forward(params, xs, convention="pytorch")["hs"]
    paper = gru.gru_forward(params, xs, convention="paper")["hs"]
    h = torch.zeros(1, H, dtype=T64)
    reference = []
    for x in _t(xs):
        h = cell(x[None], h)
        reference.append(h[0].detach().numpy())
    np.testing.assert_allclose(ours, np.array(reference), atol=1e-13)
    # the reset placement matters: the paper convention is a different function
    assert np.abs(paper - np.array(reference)).max() > 1e-3


def test_gru_z_convention_is_the_complement():
    rng = np.random.default_rng(3)
    params = gru.init_gru_params(2, 3, rng, scale=1.0)
    xs = rng.normal(size=(4, 2))
    flipped = {k: v.copy() for k, v in params.items()}
    for name in ("Wx", "Wh", "bx", "bh"):   # negate z's pre-activation: sigmoid(-a) = 1 - sigmoid(a)
        flipped[name][3:6] *= -1
    keep = gru.gru_forward(params, xs, convention=gru.GRUConvention("before", True))["hs"]
    comp = gru.gru_forward(flipped, xs, convention=gru.GRUConvention("before", False))["hs"]
    np.testing.assert_allclose(keep, comp, atol=1e-14)
    with pytest.raises(ValueError, match="unknown GRU convention"):
        gru.gru_forward(params, xs, convention="keras")


def test_parameter_counts_gru_three_maps_lstm_four():
    D, H = 10, 20
    assert gru.gru_parameter_count(D, H) == sum(p.numel() for p in torch.nn.GRUCell(D, H).parameters())
    assert gru.gru_parameter_count(D, H) == 3 * (H * D + H * H + 2 * H)
    assert gru.gru_parameter_count(D, H) * 4 == lstm.lstm_parameter_count(D, H) * 3


def test_stacked_layers_run_along_depth_and_time():
    rng = np.random.default_rng(4)
    layers = stacked.init_stacked_params(3, 4, 2, rng)
    xs = rng.normal(size=(5, 3))
    states = stacked.stacked_rnn_forward(layers, xs)["states"]
    assert states.shape == (2, 5, 4)
    np.testing.assert_allclose(states[1], rnn.rnn_hidden_forward(layers[1], states[0]), atol=0)
    # depth: the top layer at t=0 sees only x_0 (through the layer below), never later inputs
    later = xs.copy()
    later[3] += 1.0
    moved = stacked.stacked_rnn_forward(layers, later)["states"]
    np.testing.assert_array_equal(moved[:, :3], states[:, :3])
    assert np.abs(moved[1, 3:] - states[1, 3:]).max() > 0


def test_bidirectional_states_see_both_sides():
    rng = np.random.default_rng(5)
    fp, bp = rnn.init_rnn_params(3, 4, None, rng), rnn.init_rnn_params(3, 4, None, rng)
    xs = rng.normal(size=(5, 3))
    out = stacked.bidirectional_rnn_forward(fp, bp, xs)
    assert out["states"].shape == (5, 8)
    last_changed = xs.copy()
    last_changed[-1] += 1.0
    moved = stacked.bidirectional_rnn_forward(fp, bp, last_changed)
    np.testing.assert_array_equal(moved["forward"][0], out["forward"][0])   # forward: past only
    assert np.abs(moved["backward"][0] - out["backward"][0]).max() > 0      # backward: sees the end
    np.testing.assert_allclose(out["backward"][0], rnn.rnn_hidden_forward(bp, xs[::-1])[-1], atol=0)
