"""RoPE against the explicit block-diagonal d x d rotation matrix."""

import math

import pytest
import torch

from seqlab.model import RotaryPositionalEmbedding


def rotation_matrix(position: int, d: int, theta: float) -> torch.Tensor:
    """Block-diagonal R_i with 2x2 blocks [[cos, -sin], [sin, cos]] at angle i * theta^(-2k/d)."""
    R = torch.zeros(d, d, dtype=torch.float64)
    for k in range(d // 2):
        angle = position * theta ** (-2 * k / d)
        c, s = math.cos(angle), math.sin(angle)
        R[2 * k, 2 * k], R[2 * k, 2 * k + 1] = c, -s
        R[2 * k + 1, 2 * k], R[2 * k + 1, 2 * k + 1] = s, c
    return R


def test_rope_matches_explicit_rotation_matrices_with_batch_dims():
    torch.manual_seed(0)
    d, theta = 8, 10000.0
    rope = RotaryPositionalEmbedding(theta, d, max_seq_len=32)
    x = torch.randn(2, 3, 5, d)  # two batch dims
    positions = torch.tensor([0, 3, 7, 8, 31])
    y = rope(x, positions)
    expected = torch.stack(
        [x[..., j, :].double() @ rotation_matrix(int(p), d, theta).T for j, p in enumerate(positions)], dim=-2
    )
    torch.testing.assert_close(y.double(), expected, atol=1e-5, rtol=1e-5)


def test_first_position_is_not_rotated_and_default_positions_count_from_zero():
    rope = RotaryPositionalEmbedding(10000.0, 4, 16)
    x = torch.randn(1, 6, 4)
    y = rope(x)
    torch.testing.assert_close(y[:, 0], x[:, 0])
    torch.testing.assert_close(y, rope(x, torch.arange(6)))


def test_rope_accepts_per_batch_positions():
    rope = RotaryPositionalEmbedding(100.0, 6, 20)
    x = torch.randn(2, 4, 6)
    positions = torch.tensor([[0, 1, 2, 3], [5, 9, 10, 19]])
    y = rope(x, positions)
    for b in range(2):
        torch.testing.assert_close(y[b], rope(x[b], positions[b]))


def test_rope_preserves_norms_and_relative_dot_products():
    rope = RotaryPositionalEmbedding(10000.0, 16, 64)
    q, k = torch.randn(16), torch.randn(16)
    def rotate(v, p):
        return rope(v[None, :], torch.tensor([p]))[0]
    torch.testing.assert_close(rotate(q, 9).norm(), q.norm())
    # <R_m q, R_n k> depends only on m - n
    torch.testing.assert_close(rotate(q, 10) @ rotate(k, 4), rotate(q, 30) @ rotate(k, 24), atol=1e-4, rtol=1e-4)


def test_rope_tables_are_non_persistent_buffers():
    rope = RotaryPositionalEmbedding(10000.0, 8, 12)
    assert dict(rope.state_dict()) == {}
    assert {name for name, _ in rope.named_buffers()} == {"cos", "sin"}


def test_rope_rejects_positions_beyond_max_seq_len():
    rope = RotaryPositionalEmbedding(10000.0, 8, 12)
    with pytest.raises(ValueError, match=r"token position 12 .*max_seq_len=12"):
        rope(torch.randn(3, 8), torch.tensor([0, 5, 12]))
    with pytest.raises(ValueError, match="d_k=8"):
        rope(torch.randn(3, 6), torch.arange(3))


def test_rope_gradient_is_inverse_rotation_and_handles_broadcast_positions():
    rope = RotaryPositionalEmbedding(100.0, 4, 10)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    positions = torch.tensor([[1, 2, 3], [4, 5, 9]])  # x (seq, d) is broadcast over 2 position rows
    out = rope(x, positions)
    assert out.shape == (2, 3, 4)
    assert torch.autograd.gradcheck(lambda t: rope(t, positions), (x,), atol=1e-5)
