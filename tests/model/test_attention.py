"""Scaled dot-product attention and multi-head self-attention against independent oracles."""

import math

import pytest
import torch
import torch.nn.functional as F

from seqlab.model import MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention
from test_rope import rotation_matrix


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_sdpa_matches_functional_with_and_without_mask():
    Q, K, V = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 4)
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V), F.scaled_dot_product_attention(Q, K, V))
    mask = torch.rand(5, 7) > 0.4
    mask[:, 0] = True  # every row sees something (the oracle returns NaN otherwise)
    torch.testing.assert_close(
        scaled_dot_product_attention(Q, K, V, mask), F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    )


def test_three_token_causal_mask_has_six_visible_entries():
    mask = causal_mask(3, 3)
    assert mask.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert int(mask.sum()) == 6
    Q, K = torch.randn(3, 4), torch.randn(3, 4)
    V = torch.eye(3)  # output row = attention weights row
    weights = scaled_dot_product_attention(Q, K, V, mask)
    assert int((weights > 0).sum()) == 6
    torch.testing.assert_close(weights[0], torch.tensor([1.0, 0.0, 0.0]))
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))
    expected_row1 = torch.softmax(Q[1] @ K[:2].T / 2.0, -1)
    torch.testing.assert_close(weights[1, :2], expected_row1)


def test_row_without_visible_keys_gives_zero_output_not_nan():
    Q, K, V = torch.randn(2, 4, requires_grad=True), torch.randn(3, 4), torch.randn(3, 5)
    mask = torch.tensor([[False, False, False], [True, False, True]])
    out = scaled_dot_product_attention(Q, K, V, mask)
    torch.testing.assert_close(out[0].detach(), torch.zeros(5))
    out.sum().backward()
    assert torch.isfinite(Q.grad).all()


def test_sdpa_gradcheck_float64():
    Q = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    K = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    V = torch.randn(2, 5, 2, dtype=torch.float64, requires_grad=True)
    mask = causal_mask(4, 5)
    assert torch.autograd.gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, mask), (Q, K, V))


def naive_multihead(x, mha, positions=None, theta=None):
    """Per-head loop: project, (rotate with explicit matrices), causal softmax attention, concat, project."""
    batch, seq, d_model = x.shape
    h, d = mha.num_heads, mha.d_head
    heads = []
    for i in range(h):
        rows = slice(i * d, (i + 1) * d)
        q = x @ mha.q_proj.weight[rows].T
        k = x @ mha.k_proj.weight[rows].T
        v = x @ mha.v_proj.weight[rows].T
        if theta is not None:
            R = torch.stack([rotation_matrix(int(p), d, theta) for p in positions]).to(x.dtype)  # (seq, d, d)
            q = torch.einsum("sij,bsj->bsi", R, q)
            k = torch.einsum("sij,bsj->bsi", R, k)
        scores = q @ k.transpose(1, 2) / math.sqrt(d)
        scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(), float("-inf"))
        heads.append(torch.softmax(scores, -1) @ v)
    return torch.cat(heads, -1) @ mha.output_proj.weight.T


def test_multihead_matches_naive_per_head_loop_without_rope():
    mha = MultiHeadSelfAttention(12, 3)
    assert {n for n, _ in mha.named_parameters()} == {
        "q_proj.weight", "k_proj.weight", "v_proj.weight", "output_proj.weight"}
    x = torch.randn(2, 5, 12)
    torch.testing.assert_close(mha(x), naive_multihead(x, mha), atol=1e-5, rtol=1e-5)


def test_multihead_with_rope_matches_naive_loop_with_rotation_matrices():
    mha = MultiHeadSelfAttention(16, 4, max_seq_len=20, theta=10000.0, dtype=torch.float64)
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 5, 6, 19])
    torch.testing.assert_close(mha(x, positions), naive_multihead(x, mha, positions, 10000.0), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(mha(x), naive_multihead(x, mha, range(6), 10000.0), atol=1e-6, rtol=1e-6)


def test_multihead_is_causal():
    mha = MultiHeadSelfAttention(8, 2, max_seq_len=10, theta=10000.0)
    x = torch.randn(1, 6, 8)
    y = mha(x)
    x2 = x.clone()
    x2[:, 4:] = torch.randn(1, 2, 8)
    y2 = mha(x2)
    torch.testing.assert_close(y[:, :4], y2[:, :4])
    assert not torch.allclose(y[:, 4:], y2[:, 4:])


def test_multihead_gradcheck_float64():
    mha = MultiHeadSelfAttention(8, 2, max_seq_len=8, theta=100.0, dtype=torch.float64)
    x = torch.randn(1, 4, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(mha, (x,))


def test_multihead_rejects_bad_head_count():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadSelfAttention(10, 3)


def test_sdpa_gradients_match_functional_with_broadcast_keys_and_batched_mask():
    Q = torch.randn(2, 3, 4, 8, requires_grad=True)
    K = torch.randn(3, 6, 8, requires_grad=True)  # broadcast over the leading batch dim
    V = torch.randn(3, 6, 5, requires_grad=True)
    mask = torch.rand(2, 1, 4, 6) > 0.3
    mask[..., 0] = True
    out = scaled_dot_product_attention(Q, K, V, mask)
    grad = torch.randn_like(out)
    out.backward(grad)
    Q2, K2, V2 = (t.detach().clone().requires_grad_() for t in (Q, K, V))
    ref = F.scaled_dot_product_attention(Q2, K2.expand(2, 3, 6, 8), V2.expand(2, 3, 6, 5), attn_mask=mask)
    ref.backward(grad)
    torch.testing.assert_close(out, ref)
    for ours, theirs in ((Q, Q2), (K, K2), (V, V2)):
        torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("chunk_scores", [1 << 18, 40])
def test_blocked_causal_path_matches_functional_with_cache_offset_and_padding(monkeypatch, chunk_scores):
    import seqlab.model.attention as attention

    # force the causal query-block split and many small (batch, head) chunks on a small problem
    monkeypatch.setattr(attention, "CAUSAL_MIN_QUERIES", 4)
    monkeypatch.setattr(attention, "CHUNK_SCORES", chunk_scores)
    Q = torch.randn(2, 3, 10, 8, dtype=torch.float64, requires_grad=True)
    K = torch.randn(2, 3, 13, 8, dtype=torch.float64, requires_grad=True)  # 3 cached + 10 new keys
    V = torch.randn(2, 3, 13, 4, dtype=torch.float64, requires_grad=True)
    padding = torch.rand(2, 1, 1, 13) > 0.3
    padding[..., 0] = True
    for pad in (None, padding):
        out = scaled_dot_product_attention(Q, K, V, pad, causal=True)
        grad = torch.randn_like(out)
        got = torch.autograd.grad(out, (Q, K, V), grad)
        mask = causal_mask(10, 13) if pad is None else causal_mask(10, 13) & pad
        ref = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
        expected = torch.autograd.grad(ref, (Q, K, V), grad)
        torch.testing.assert_close(out, ref)
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b)
