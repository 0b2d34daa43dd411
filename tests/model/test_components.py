"""Linear, Embedding, RMSNorm, SiLU, softmax, SwiGLU against torch.nn.functional."""

import math

import pytest
import torch
import torch.nn.functional as F

from seqlab.model import (
    Embedding,
    Linear,
    RMSNorm,
    SiLUFeedForward,
    SwiGLU,
    default_d_ff,
    relu,
    silu,
    softmax,
)
from seqlab.model.rmsnorm import rms_norm


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_linear_matches_functional_linear_and_has_no_bias():
    layer = Linear(7, 5)
    assert layer.weight.shape == (5, 7)
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    x = torch.randn(3, 4, 7)
    torch.testing.assert_close(layer(x), F.linear(x, layer.weight))


def test_linear_init_is_truncated_normal_with_xavier_std():
    layer = Linear(300, 500)
    std = math.sqrt(2 / 800)
    w = layer.weight.detach()
    assert w.abs().max() <= 3 * std + 1e-7
    # truncation at 3 sigma shrinks the std by about 1.3%
    assert abs(w.std().item() / std - 0.9866) < 0.02
    assert abs(w.mean().item()) < 0.1 * std


def test_embedding_matches_functional_embedding():
    emb = Embedding(11, 6)
    assert emb.weight.shape == (11, 6)
    ids = torch.randint(0, 11, (2, 9))
    torch.testing.assert_close(emb(ids), F.embedding(ids, emb.weight))
    w = emb.weight.detach()
    assert w.abs().max() <= 3.0 and abs(w.std().item() - 0.9866) < 0.2


def test_embedding_rejects_out_of_vocab_id_with_position():
    emb = Embedding(11, 6)
    with pytest.raises(ValueError, match=r"token id 11 at row 1, position 2 is outside the vocabulary \[0, 11\)"):
        emb(torch.tensor([[0, 1, 2], [3, 4, 11]]))
    with pytest.raises(ValueError, match="token id -1"):
        emb(torch.tensor([-1]))


def test_rmsnorm_matches_functional_rms_norm():
    norm = RMSNorm(8, eps=1e-5)
    torch.testing.assert_close(norm.weight.detach(), torch.ones(8))
    with torch.no_grad():
        norm.weight.copy_(torch.randn(8))
    x = torch.randn(2, 3, 8) * 5
    torch.testing.assert_close(norm(x), F.rms_norm(x, (8,), norm.weight, eps=1e-5))


def test_rmsnorm_computes_in_float32_and_returns_input_dtype():
    norm = RMSNorm(16)
    x = (torch.randn(4, 16) * 100).to(torch.bfloat16)
    y = norm(x)
    assert y.dtype == torch.bfloat16
    expected = F.rms_norm(x.float(), (16,), norm.weight.float(), eps=1e-5).to(torch.bfloat16)
    torch.testing.assert_close(y, expected)


def test_rmsnorm_gradients_match_autograd_oracle_and_gradcheck():
    x = torch.randn(3, 5, 6, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, dtype=torch.float64, requires_grad=True)
    norm = RMSNorm(6, dtype=torch.float64)
    with torch.no_grad():
        norm.weight.copy_(w)
    assert torch.autograd.gradcheck(lambda a, b: rms_norm(a, b, 1e-5), (x, w))
    g = torch.randn(3, 5, 6, dtype=torch.float64)
    norm(x).backward(g)
    x2 = x.detach().clone().requires_grad_()
    w2 = w.detach().clone().requires_grad_()
    F.rms_norm(x2, (6,), w2, 1e-5).backward(g)
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(norm.weight.grad, w2.grad)


def test_relu_matches_functional_values_and_gradients_and_gradcheck():
    x = torch.tensor([-2.0, -0.5, 0.0, 0.25, 3.0])
    torch.testing.assert_close(relu(x), torch.tensor([0.0, 0.0, 0.0, 0.25, 3.0]))
    torch.manual_seed(0)
    x = torch.randn(4, 7, 33, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    upstream = torch.randn(4, 7, 33)
    relu(x).backward(upstream)
    F.relu(x_ref).backward(upstream)
    torch.testing.assert_close(relu(x.detach()), F.relu(x_ref.detach()))
    torch.testing.assert_close(x.grad, x_ref.grad)
    # gradcheck away from the kink at 0, where the derivative is undefined
    x64 = torch.randn(3, 5, dtype=torch.float64)
    x64 = (x64 + 0.1 * x64.sign()).requires_grad_()
    assert torch.autograd.gradcheck(relu, (x64,))


def test_silu_matches_functional_and_gradcheck():
    x = torch.linspace(-20, 20, 101)
    torch.testing.assert_close(silu(x), F.silu(x))
    x64 = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(silu, (x64,))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_matches_torch_softmax(dim):
    x = torch.randn(4, 5, 6) * 3
    torch.testing.assert_close(softmax(x, dim), torch.softmax(x, dim))


def test_softmax_is_stable_for_huge_logits():
    x = torch.tensor([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4]])
    y = softmax(x, -1)
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y, torch.softmax(x.double(), -1).float())
    torch.testing.assert_close(y.sum(-1), torch.ones(2))


def test_softmax_of_all_masked_row_is_zero_not_nan():
    x = torch.tensor([[float("-inf")] * 3, [0.0, float("-inf"), 1.0]], requires_grad=True)
    y = softmax(x, -1)
    torch.testing.assert_close(y[0].detach(), torch.zeros(3))
    torch.testing.assert_close(y[1].detach(), torch.softmax(torch.tensor([0.0, float("-inf"), 1.0]), -1))
    y.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_softmax_gradcheck():
    x = torch.randn(3, 4, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: softmax(t, 1), (x,))


def test_swiglu_matches_functional_formula_and_gradcheck():
    ffn = SwiGLU(16, 48, dtype=torch.float64)
    assert {n for n, _ in ffn.named_parameters()} == {"w1.weight", "w2.weight", "w3.weight"}
    assert ffn.w1.weight.shape == (48, 16) and ffn.w2.weight.shape == (16, 48) and ffn.w3.weight.shape == (48, 16)
    x = torch.randn(2, 3, 16, dtype=torch.float64, requires_grad=True)
    expected = F.linear(F.silu(F.linear(x, ffn.w1.weight)) * F.linear(x, ffn.w3.weight), ffn.w2.weight)
    torch.testing.assert_close(ffn(x), expected)
    small = SwiGLU(4, 6, dtype=torch.float64)
    assert torch.autograd.gradcheck(small, (torch.randn(2, 4, dtype=torch.float64, requires_grad=True),))


def test_swiglu_default_d_ff_is_eight_thirds_rounded_to_64():
    assert SwiGLU(512).d_ff == 1344
    assert default_d_ff(768, "swiglu") == 2048
    assert default_d_ff(64, "swiglu") == 192


def test_silu_ffn_ablation_matches_formula():
    ffn = SiLUFeedForward(8)
    assert ffn.d_ff == 32 and {n for n, _ in ffn.named_parameters()} == {"w1.weight", "w2.weight"}
    x = torch.randn(5, 8)
    torch.testing.assert_close(ffn(x), F.linear(F.silu(F.linear(x, ffn.w1.weight)), ffn.w2.weight))


def test_broadcast_shapes_agrees_with_torch_and_refuses_what_torch_refuses():
    import random

    from seqlab.model.broadcast import broadcast_shapes

    rng = random.Random(0)
    sizes = (1, 2, 3)
    for _ in range(300):
        shapes = [tuple(rng.choice(sizes) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(1, 4))]
        try:
            want = torch.broadcast_shapes(*shapes)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="do not broadcast"):
                broadcast_shapes(*shapes)
            continue
        assert broadcast_shapes(*shapes) == want, shapes
    assert broadcast_shapes((2, 1, 4), (3, 1), ()) == torch.Size([2, 3, 4])  # the docstring's example
    assert broadcast_shapes() == torch.broadcast_shapes() == torch.Size([])
