"""LayerNorm against F.layer_norm; sinusoidal and learned positions against the formula."""

import math

import pytest
import torch
import torch.nn.functional as F

from seqlab.model import (
    LayerNorm,
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
)


def test_layernorm_matches_functional_layer_norm_values_and_gradients():
    torch.manual_seed(0)
    norm = LayerNorm(8, dtype=torch.float64)
    assert [n for n, _ in norm.named_parameters()] == ["weight", "bias"]
    torch.testing.assert_close(norm.weight.detach(), torch.ones(8, dtype=torch.float64))
    torch.testing.assert_close(norm.bias.detach(), torch.zeros(8, dtype=torch.float64))
    with torch.no_grad():
        norm.weight.copy_(torch.randn(8))
        norm.bias.copy_(torch.randn(8))
    x = (torch.randn(2, 3, 8, dtype=torch.float64) * 5 + 3).requires_grad_()
    got = norm(x)
    want = F.layer_norm(x, (8,), norm.weight, norm.bias, eps=1e-5)
    torch.testing.assert_close(got, want)
    g = torch.randn_like(got)
    torch.testing.assert_close(torch.autograd.grad(got, (x, norm.weight, norm.bias), g),
                               torch.autograd.grad(want, (x, norm.weight, norm.bias), g))


def test_layernorm_float32_without_bias_and_gradcheck():
    torch.manual_seed(1)
    norm = LayerNorm(6, eps=1e-6, bias=False)
    assert norm.bias is None and [n for n, _ in norm.named_parameters()] == ["weight"]
    x = torch.randn(4, 6) * 100
    torch.testing.assert_close(norm(x), F.layer_norm(x, (6,), norm.weight, None, eps=1e-6))
    norm64 = LayerNorm(5, dtype=torch.float64)
    x64 = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(norm64, (x64,))


def test_layernorm_worked_example_and_shape_error():
    norm = LayerNorm(2, eps=0.0)
    torch.testing.assert_close(norm(torch.tensor([[1.0, 3.0]])), torch.tensor([[-1.0, 1.0]]))
    with pytest.raises(ValueError, match=r"LayerNorm\(2\) got input of shape \(3, 4\)"):
        norm(torch.randn(3, 4))


def test_sinusoidal_table_matches_the_formula_in_a_loop():
    d, n = 6, 9
    pe = SinusoidalPositionalEncoding(d, n, dtype=torch.float64)
    assert "table" not in pe.state_dict()  # non-persistent buffer
    want = torch.empty(n, d, dtype=torch.float64)
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            want[pos, 2 * i], want[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    torch.testing.assert_close(pe(n), want)
    torch.testing.assert_close(pe(3, offset=4), want[4:7])
    torch.testing.assert_close(pe(0, token_positions=torch.tensor([[2, 8]])), want[[2, 8]][None])


def test_positions_out_of_range_say_how_to_fix():
    pe = SinusoidalPositionalEncoding(4, 5)
    with pytest.raises(ValueError, match=r"positions 3..6 exceed max_seq_len=5"):
        pe(4, offset=3)
    learned = LearnedPositionalEmbedding(4, 5)
    with pytest.raises(ValueError, match=r"token position 7 at index \(1,\)"):
        learned(0, token_positions=torch.tensor([1, 7]))
    with pytest.raises(ValueError, match="even d_model"):
        SinusoidalPositionalEncoding(5, 3)


def test_learned_positions_are_a_trained_table():
    torch.manual_seed(2)
    learned = LearnedPositionalEmbedding(4, 10)
    assert [n for n, _ in learned.named_parameters()] == ["weight"]
    assert learned.weight.abs().max() <= 0.06 + 1e-7
    torch.testing.assert_close(learned(3, offset=2), learned.weight[2:5])
    learned(3).sum().backward()
    assert learned.weight.grad[:3].abs().sum() > 0 and learned.weight.grad[3:].abs().sum() == 0


def test_layer_norm_function_without_weight_matches_and_passes_gradcheck():
    from seqlab.model.layernorm import layer_norm

    torch.manual_seed(3)
    x = torch.randn(2, 4, 7, dtype=torch.float64, requires_grad=True)
    w = torch.randn(7, dtype=torch.float64, requires_grad=True)
    b = torch.randn(7, dtype=torch.float64, requires_grad=True)
    torch.testing.assert_close(layer_norm(x, None, None), F.layer_norm(x, (7,)))
    assert torch.autograd.gradcheck(lambda x, w, b: layer_norm(x, w, b), (x, w, b))
    assert torch.autograd.gradcheck(lambda x: layer_norm(x, None, None), (x,))
    bf = torch.randn(3, 8).bfloat16()
    torch.testing.assert_close(layer_norm(bf, None, None).float(), F.layer_norm(bf.float(), (8,)),
                               atol=2e-2, rtol=2e-2)
