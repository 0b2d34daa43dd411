"""RNN/GRU/LSTM cells against torch.nn cells, the paper GRU against a naive formula, and the padded
RecurrentLayer against running each sequence alone and against torch.nn.GRU/LSTM."""

import pytest
import torch
from torch import nn

from seqlab.model import GRUCell, LSTMCell, RecurrentLayer, RNNCell

pytestmark = pytest.mark.usefixtures("one_thread")

ORACLES = {"rnn": (RNNCell, nn.RNNCell), "gru": (GRUCell, nn.GRUCell), "lstm": (LSTMCell, nn.LSTMCell)}


def _copy_into(ours, theirs):
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(theirs, name).copy_(getattr(ours, name))


@pytest.mark.parametrize("kind", sorted(ORACLES))
def test_cell_matches_torch_cell_values_and_gradients(kind):
    torch.manual_seed(0)
    ours_cls, torch_cls = ORACLES[kind]
    ours = ours_cls(5, 7, dtype=torch.float64)
    theirs = torch_cls(5, 7, dtype=torch.float64)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    _copy_into(ours, theirs)
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    h = torch.randn(4, 7, dtype=torch.float64)
    state = (h, torch.randn(4, 7, dtype=torch.float64)) if kind == "lstm" else h
    got, want = ours(x, state), theirs(x, state)
    got_h = got[0] if kind == "lstm" else got
    want_h = want[0] if kind == "lstm" else want
    torch.testing.assert_close(got_h, want_h)
    if kind == "lstm":
        torch.testing.assert_close(got[1], want[1])
    g_ours = torch.autograd.grad(got_h.sum(), (x, ours.weight_hh))
    g_theirs = torch.autograd.grad(want_h.sum(), (x, theirs.weight_hh))
    for a, b in zip(g_ours, g_theirs):
        torch.testing.assert_close(a, b)
    # no state -> zeros, as in torch
    torch.testing.assert_close(ours(x)[0] if kind == "lstm" else ours(x),
                               theirs(x)[0] if kind == "lstm" else theirs(x))


def test_gru_reset_before_matches_the_paper_formula_and_differs_from_pytorch():
    torch.manual_seed(1)
    cell = GRUCell(3, 4, reset="before", dtype=torch.float64)
    x, h = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    W_ir, W_iz, W_in = cell.weight_ih.chunk(3)
    W_hr, W_hz, W_hn = cell.weight_hh.chunk(3)
    b_ir, b_iz, b_in = cell.bias_ih.chunk(3)
    b_hr, b_hz, b_hn = cell.bias_hh.chunk(3)
    r = torch.sigmoid(x @ W_ir.T + b_ir + h @ W_hr.T + b_hr)
    z = torch.sigmoid(x @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
    n = torch.tanh(x @ W_in.T + b_in + (r * h) @ W_hn.T + b_hn)
    torch.testing.assert_close(cell(x, h), (1 - z) * n + z * h)
    after = GRUCell(3, 4, reset="after", dtype=torch.float64)
    after.load_state_dict(cell.state_dict())
    assert (after(x, h) - cell(x, h)).abs().max() > 1e-3
    with pytest.raises(ValueError, match="reset must be 'after'"):
        GRUCell(3, 4, reset="middle")


@pytest.mark.parametrize("kind", ["gru", "lstm", "rnn"])
def test_cells_pass_gradcheck_in_float64(kind):
    torch.manual_seed(2)
    cell = ORACLES[kind][0](3, 4, dtype=torch.float64)
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    h = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    if kind == "lstm":
        c = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda x, h, c: cell(x, (h, c)), (x, h, c))
    else:
        assert torch.autograd.gradcheck(lambda x, h: cell(x, h), (x, h))


@pytest.mark.parametrize("kind", ["gru", "lstm", "rnn"])
def test_padded_batch_equals_one_sequence_at_a_time(kind):
    torch.manual_seed(3)
    layer = RecurrentLayer(kind, 5, 6, num_layers=2, dtype=torch.float64)
    lengths = [7, 3, 5, 1]
    x = torch.randn(4, 7, 5, dtype=torch.float64)
    mask = torch.arange(7)[None, :] < torch.tensor(lengths)[:, None]
    x = x.masked_fill(~mask[..., None], 1e3)  # padded inputs must not matter
    outputs, final = layer(x, mask)
    for b, n in enumerate(lengths):
        alone_out, alone_final = layer(x[b:b + 1, :n])
        torch.testing.assert_close(outputs[b, :n], alone_out[0])
        assert outputs[b, n:].abs().max() == 0 if n < 7 else True
        if kind == "lstm":
            torch.testing.assert_close(final[0][:, b], alone_final[0][:, 0])
            torch.testing.assert_close(final[1][:, b], alone_final[1][:, 0])
        else:
            torch.testing.assert_close(final[:, b], alone_final[:, 0])


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_stacked_layer_matches_torch_gru_lstm_with_packed_sequences(kind):
    torch.manual_seed(4)
    layer = RecurrentLayer(kind, 5, 6, num_layers=2, dtype=torch.float64)
    oracle = (nn.GRU if kind == "gru" else nn.LSTM)(5, 6, num_layers=2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for i, cell in enumerate(layer.cells):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(oracle, f"{name}_l{i}").copy_(getattr(cell, name))
    lengths = torch.tensor([6, 2, 4])
    x = torch.randn(3, 6, 5, dtype=torch.float64)
    mask = torch.arange(6)[None, :] < lengths[:, None]
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    want_packed, want_final = oracle(packed)
    want, _ = nn.utils.rnn.pad_packed_sequence(want_packed, batch_first=True, total_length=6)
    got, got_final = layer(x, mask)
    torch.testing.assert_close(got, want)
    by_lengths, _ = layer(x, lengths=lengths)
    torch.testing.assert_close(by_lengths, want)
    if kind == "lstm":
        torch.testing.assert_close(got_final[0], want_final[0])
        torch.testing.assert_close(got_final[1], want_final[1])
    else:
        torch.testing.assert_close(got_final, want_final)


def test_layer_rejects_bad_shapes_with_the_shape_in_the_message():
    layer = RecurrentLayer("gru", 5, 6)
    with pytest.raises(ValueError, match=r"\(batch, time, features\), got \(3, 5\)"):
        layer(torch.randn(3, 5))
    with pytest.raises(ValueError, match=r"padding_mask must have shape .*\(2, 4\), got \(2, 3\)"):
        layer(torch.randn(2, 4, 5), torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"lengths must have shape \(batch,\) = \(2,\), got \(3,\)"):
        layer(torch.randn(2, 4, 5), lengths=torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="expects inputs of size 5"):
        layer(torch.randn(2, 4, 3))
