import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqlab.labs import conv, mlp


def test_xor_trains_and_records_final_loss():
    result = mlp.train_xor()
    assert result.predictions == [0, 1, 1, 0]
    assert result.final_loss < 0.01
    assert result.final_loss == result.loss_trace[-1] < result.loss_trace[0]
    assert mlp.train_xor().loss_trace == result.loss_trace        # fixed seed: deterministic


def test_mlp_gradients_match_torch_autograd():
    params = mlp.init_mlp_params(4, np.random.default_rng(0), "softmax")
    loss, grads = mlp.mlp_loss_and_grads(params, activation="tanh")
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    X = torch.tensor(mlp.XOR_INPUTS)
    logits = torch.tanh(X @ tp["W1"].T + tp["b1"]) @ tp["W2"].T + tp["b2"]
    ref = F.cross_entropy(logits, torch.tensor(mlp.XOR_TARGETS))
    ref.backward()
    assert loss == pytest.approx(ref.item(), abs=1e-13)
    for k in params:
        np.testing.assert_allclose(grads[k], tp[k].grad.numpy(), atol=1e-13)


def test_relu_check_points_are_away_from_the_kink():
    params = mlp.shift_to_active(mlp.init_mlp_params(4, np.random.default_rng(1)))
    pre = mlp.mlp_forward(params, mlp.XOR_INPUTS, "relu")["pre"]
    assert pre.min() >= 0.1 - 1e-12


def test_conv_forward_and_backward_match_torch():
    rng = np.random.default_rng(0)
    for x, w, b, fwd, bwd, ref_fn in (
        (rng.normal(size=(2, 9)), rng.normal(size=(3, 2, 4)), rng.normal(size=3), conv.conv1d, conv.conv1d_backward, F.conv1d),
        (rng.normal(size=(2, 5, 6)), rng.normal(size=(3, 2, 2, 3)), rng.normal(size=3), conv.conv2d, conv.conv2d_backward, F.conv2d),
    ):
        out = fwd(x, w, b)
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
        ref = ref_fn(tx[None], tw, tb)[0]
        np.testing.assert_allclose(out, ref.detach().numpy(), atol=1e-13)
        dout = rng.normal(size=out.shape)
        (ref * torch.tensor(dout)).sum().backward()
        grads = bwd(x, w, dout)
        for key, t in (("x", tx), ("w", tw), ("b", tb)):
            np.testing.assert_allclose(grads[key], t.grad.numpy(), atol=1e-12)


def test_shared_filter_gradient_sums_over_every_position():
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=(1, 6)), rng.normal(size=(1, 1, 3))
    dout = rng.normal(size=(1, 4))
    per_position = conv.filter_gradient_contributions_1d(x, dout, 3)
    assert per_position.shape == (4, 1, 1, 3)
    dw = conv.conv1d_backward(x, w, dout)["w"]
    np.testing.assert_allclose(dw, per_position.sum(axis=0), atol=1e-15)
    # any single position alone is NOT the filter's gradient
    assert all(np.abs(per_position[t] - dw).max() > 1e-3 for t in range(4))
    # and the sum is what finite differences measure
    from seqlab.labs.gradcheck import numerical_gradient, relative_error
    numeric = numerical_gradient(lambda v: float(np.sum(dout * conv.conv1d(x, v))), w.copy(), 1e-5)
    assert relative_error(dw, numeric) < 1e-7


def test_conv_shape_errors():
    with pytest.raises(ValueError, match="input channels"):
        conv.conv1d(np.zeros((2, 5)), np.zeros((1, 3, 2)))
    with pytest.raises(ValueError, match="larger than input"):
        conv.conv2d(np.zeros((1, 2, 2)), np.zeros((1, 1, 3, 3)))
