"""Attention (the reference formula and the cache-blocked CPU kernel) and multi-head self-attention,
against independent oracles: torch.nn.functional.scaled_dot_product_attention, gradcheck, naive loops."""

import math

import pytest
import torch
import torch.nn.functional as F
from test_rope import rotation_matrix

import seqlab.model.chunked_attention as chunked_module
from seqlab.model import (
    MultiHeadAttention,
    causal_mask,
    scaled_dot_product_attention,
)
from seqlab.model.chunked_attention import chunked_attention

BACKENDS = {"reference": scaled_dot_product_attention, "chunked": chunked_attention}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(params=sorted(BACKENDS))
def attend(request):
    return BACKENDS[request.param]


def test_sdpa_matches_functional_with_and_without_mask(attend):
    Q, K, V = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 4)
    torch.testing.assert_close(attend(Q, K, V), F.scaled_dot_product_attention(Q, K, V))
    mask = torch.rand(5, 7) > 0.4
    mask[:, 0] = True  # every row sees something (the oracle returns NaN otherwise)
    torch.testing.assert_close(attend(Q, K, V, mask), F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))


def test_docstring_example_of_the_reference():
    Q = K = torch.eye(2)
    V = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    weights = torch.softmax(torch.tensor([0.0, 1.0 / math.sqrt(2.0)]), -1)
    expected = torch.stack([V[0], weights @ V])
    torch.testing.assert_close(scaled_dot_product_attention(Q, K, V, causal=True), expected)
    torch.testing.assert_close(expected[1], torch.tensor([2.34, 3.34]), atol=6e-3, rtol=0)


def test_three_token_causal_mask_has_six_visible_entries(attend):
    mask = causal_mask(3, 3)
    assert mask.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert causal_mask(2, 4).tolist() == [[True, True, True, False], [True, True, True, True]]
    assert int(mask.sum()) == 6
    Q, K = torch.randn(3, 4), torch.randn(3, 4)
    V = torch.eye(3)  # output row = attention weights row
    weights = attend(Q, K, V, mask)
    assert int((weights > 0).sum()) == 6
    torch.testing.assert_close(weights[0], torch.tensor([1.0, 0.0, 0.0]))
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))
    expected_row1 = torch.softmax(Q[1] @ K[:2].T / 2.0, -1)
    torch.testing.assert_close(weights[1, :2], expected_row1)


def test_row_without_visible_keys_gives_zero_output_and_gradients_match_functional(attend):
    Q = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    K = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    V = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[False, False, False], [True, False, True], [True, True, False]])
    out = attend(Q, K, V, mask)
    torch.testing.assert_close(out[:, 0].detach(), torch.zeros(2, 5, dtype=torch.float64))
    grad = torch.randn_like(out)
    got = torch.autograd.grad(out, (Q, K, V), grad)
    # oracle on the rows that see something (F gives NaN for an empty row); the empty row adds nothing
    visible = slice(1, 3)
    ref = F.scaled_dot_product_attention(Q[:, visible], K, V, attn_mask=mask[visible])
    expected = torch.autograd.grad(ref, (Q, K, V), grad[:, visible])
    torch.testing.assert_close(out[:, visible], ref)
    torch.testing.assert_close(got[0][:, 0], torch.zeros(2, 4, dtype=torch.float64))
    torch.testing.assert_close(got[0][:, visible], expected[0][:, visible])
    for ours, theirs in zip(got[1:], expected[1:]):
        torch.testing.assert_close(ours, theirs)


def test_sdpa_gradcheck_float64(attend):
    Q = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    K = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    V = torch.randn(2, 5, 2, dtype=torch.float64, requires_grad=True)
    mask = causal_mask(4, 5)
    assert torch.autograd.gradcheck(lambda q, k, v: attend(q, k, v, mask), (Q, K, V))


def test_both_backends_reject_mismatched_inputs(attend):
    Q, K, V = torch.randn(2, 4), torch.randn(3, 4), torch.randn(3, 5)
    with pytest.raises(ValueError, match="d_k=4 but K has 3"):
        attend(Q, K[:, :3], V)
    with pytest.raises(ValueError, match="3 keys but V has 2"):
        attend(Q, K, V[:2])
    with pytest.raises(TypeError, match=r"must be bool.*mask\.bool\(\)"):
        attend(Q, K, V, torch.ones(2, 3))


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
    mha = MultiHeadAttention(12, 3)
    assert {n for n, _ in mha.named_parameters()} == {
        "q_proj.weight", "k_proj.weight", "v_proj.weight", "output_proj.weight"}
    x = torch.randn(2, 5, 12)
    torch.testing.assert_close(mha(x), naive_multihead(x, mha), atol=1e-5, rtol=1e-5)


def test_multihead_with_rope_matches_naive_loop_with_rotation_matrices():
    mha = MultiHeadAttention(16, 4, max_seq_len=20, theta=10000.0, dtype=torch.float64)
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 5, 6, 19])
    torch.testing.assert_close(mha(x, positions), naive_multihead(x, mha, positions, 10000.0), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(mha(x), naive_multihead(x, mha, range(6), 10000.0), atol=1e-6, rtol=1e-6)


def test_multihead_is_causal():
    mha = MultiHeadAttention(8, 2, max_seq_len=10, theta=10000.0)
    x = torch.randn(1, 6, 8)
    y = mha(x)
    x2 = x.clone()
    x2[:, 4:] = torch.randn(1, 2, 8)
    y2 = mha(x2)
    torch.testing.assert_close(y[:, :4], y2[:, :4])
    assert not torch.allclose(y[:, 4:], y2[:, 4:])


def test_multihead_gradcheck_float64():
    mha = MultiHeadAttention(8, 2, max_seq_len=8, theta=100.0, dtype=torch.float64)
    x = torch.randn(1, 4, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(mha, (x,))


def test_multihead_rejects_bad_head_count():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)


def test_sdpa_gradients_match_functional_with_broadcast_keys_and_batched_mask(attend):
    Q = torch.randn(2, 3, 4, 8, requires_grad=True)
    K = torch.randn(3, 6, 8, requires_grad=True)  # broadcast over the leading batch dim
    V = torch.randn(3, 6, 5, requires_grad=True)
    mask = torch.rand(2, 1, 4, 6) > 0.3
    mask[..., 0] = True
    out = attend(Q, K, V, mask)
    grad = torch.randn_like(out)
    out.backward(grad)
    Q2, K2, V2 = (t.detach().clone().requires_grad_() for t in (Q, K, V))
    ref = F.scaled_dot_product_attention(Q2, K2.expand(2, 3, 6, 8), V2.expand(2, 3, 6, 5), attn_mask=mask)
    ref.backward(grad)
    torch.testing.assert_close(out, ref)
    for ours, theirs in ((Q, Q2), (K, K2), (V, V2)):
        torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-5, rtol=1e-5)


def test_causal_attention_with_cached_keys_and_padding_matches_functional(attend):
    Q = torch.randn(2, 3, 10, 8, dtype=torch.float64, requires_grad=True)
    K = torch.randn(2, 3, 13, 8, dtype=torch.float64, requires_grad=True)  # 3 cached + 10 new keys
    V = torch.randn(2, 3, 13, 4, dtype=torch.float64, requires_grad=True)
    padding = torch.rand(2, 1, 1, 13) > 0.3
    padding[..., 0] = True
    for pad in (None, padding):
        out = attend(Q, K, V, pad, causal=True)
        grad = torch.randn_like(out)
        got = torch.autograd.grad(out, (Q, K, V), grad)
        mask = causal_mask(10, 13) if pad is None else causal_mask(10, 13) & pad
        ref = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
        expected = torch.autograd.grad(ref, (Q, K, V), grad)
        torch.testing.assert_close(out, ref)
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b)


def test_chunked_keeps_probabilities_only_for_a_small_call(monkeypatch):
    """A call above KEEP_PROBS_SCORES saves no (n, m) probabilities for its backward (only Q, K, V, the
    output, the row log-sum-exps and the mask); a small one keeps each chunk's P."""
    Q, K, V = (torch.randn(2, 3, 10, 4, requires_grad=True) for _ in range(3))
    saved = lambda: [tuple(t.shape) for t in chunked_attention(Q, K, V, causal=True).grad_fn.saved_tensors
                     if t is not None]
    monkeypatch.setattr(chunked_module, "KEEP_PROBS_SCORES", 2 * 3 * 10 * 10 - 1)
    assert (6, 1, 10, 10) not in saved() and len(saved()) == 6
    monkeypatch.setattr(chunked_module, "KEEP_PROBS_SCORES", 2 * 3 * 10 * 10)
    assert (6, 1, 10, 10) in saved()


def test_chunked_query_blocks_of_a_causal_range():
    assert chunked_module.query_blocks(256, 256, causal=True) == [
        (0, 64, 64), (64, 128, 128), (128, 192, 192), (192, 256, 256)]
    assert chunked_module.query_blocks(200, 203, causal=True)[0] == (0, 50, 53)  # 3 cached keys
    assert chunked_module.query_blocks(256, 256, causal=False) == [(0, 256, 256)]


@pytest.mark.parametrize("keep_probs_scores", [0, 1 << 20], ids=["recompute", "keep"])
@pytest.mark.parametrize("scores_per_chunk", [1 << 18, 40])
def test_chunked_blocks_and_small_chunks_equal_the_reference(monkeypatch, scores_per_chunk, keep_probs_scores):
    # force the causal query-block split and many small (batch, head) chunks on a small problem, with
    # the backward recomputing P (as for a large problem) or keeping each chunk's P (a small one)
    monkeypatch.setattr(chunked_module, "CAUSAL_MIN_QUERIES", 4)
    monkeypatch.setattr(chunked_module, "SCORES_PER_CHUNK", scores_per_chunk)
    monkeypatch.setattr(chunked_module, "KEEP_PROBS_SCORES", keep_probs_scores)
    Q = torch.randn(2, 3, 10, 8, dtype=torch.float64, requires_grad=True)
    K = torch.randn(2, 3, 13, 8, dtype=torch.float64, requires_grad=True)
    V = torch.randn(2, 3, 13, 4, dtype=torch.float64, requires_grad=True)
    padding = torch.rand(2, 1, 1, 13) > 0.3
    padding[0, 0, 0, :] = False  # a sequence with no real key: zero output rows
    for pad in (None, padding):
        outs = [attend(Q, K, V, pad, causal=True) for attend in (chunked_attention, scaled_dot_product_attention)]
        grad = torch.randn_like(outs[0])
        grads = [torch.autograd.grad(out, (Q, K, V), grad) for out in outs]
        torch.testing.assert_close(outs[0], outs[1])
        for a, b in zip(*grads):
            torch.testing.assert_close(a, b)


def test_attention_weights_match_a_masked_torch_softmax_and_fully_masked_rows_are_zero():
    """attention_weights is the part of scaled_dot_product_attention before V; the oracle is
    torch.softmax of the masked scores, written here."""
    from seqlab.model.attention import attention_weights

    torch.manual_seed(0)
    Q, K = torch.randn(2, 3, 4, 8, dtype=torch.float64), torch.randn(2, 3, 6, 8, dtype=torch.float64)
    mask = torch.rand(2, 1, 4, 6) > 0.3
    mask[1, 0, 0] = False  # the first query of the second batch row sees nothing
    visible = mask & (torch.arange(6)[None, :] <= torch.arange(4)[:, None] + 2)  # causal, 2 cached keys
    scores = (Q @ K.transpose(-1, -2) / 8 ** 0.5).masked_fill(~visible, float("-inf"))
    expected = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    got = attention_weights(Q, K, mask, causal=True)
    torch.testing.assert_close(got, expected)
    assert torch.all(got[1, :, 0] == 0)
