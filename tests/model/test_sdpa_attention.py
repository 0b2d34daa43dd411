"""The sdpa backend (torch's fused scaled_dot_product_attention) against seqlab's reference attention:
values and gradients, bottom-right causal alignment with a KV cache, grouped-query heads, rows with no
visible key, and the backend-support table."""

import pytest
import torch
import torch.nn.functional as F

import seqlab.model.sdpa_attention as sdpa_module
from benchmarks.instruments.op_count import OpCounter
from seqlab.model import gpu_path_forced
from seqlab.model.attention import scaled_dot_product_attention as reference
from seqlab.model.backend_support import (
    BACKENDS,
    attention_backend_supports,
)
from seqlab.model.sdpa_attention import sdpa_attention

pytestmark = pytest.mark.usefixtures("one_thread")


def tensors(batch, heads, kv_heads, n, m, d, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    make = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    return make(batch, heads, n, d), make(batch, kv_heads, m, d), make(batch, kv_heads, m, d)


def expand_heads(t, heads):
    """K/V with kv_heads -> heads, head h reading kv head h // group (what the reference needs)."""
    return t.repeat_interleave(heads // t.shape[-3], dim=-3)


def compare(fn, q, k, v, mask, causal, **tolerance):
    out = fn(q, k, v, mask, causal=causal)
    grad_out = torch.randn(out.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64).to(out.dtype)
    grads = torch.autograd.grad(out, (q, k, v), grad_out)
    heads = q.shape[-3]
    expected = reference(q, expand_heads(k, heads), expand_heads(v, heads), mask, causal=causal)
    expected_grads = torch.autograd.grad(expected, (q, k, v), grad_out)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    torch.testing.assert_close(out, expected, **tolerance)
    for name, a, b in zip("QKV", grads, expected_grads):
        assert torch.isfinite(a).all(), name
        torch.testing.assert_close(a, b, msg=lambda msg, name=name: f"d{name}: {msg}", **tolerance)
    return out


# (batch, heads, kv_heads, n, m, d): n == m (training), n < m (cached keys), n == 1 (decoding),
# n > m (the first queries see no key), grouped-query heads
SHAPES = [(2, 4, 4, 7, 7, 8), (2, 4, 2, 5, 9, 8), (1, 4, 1, 1, 9, 16), (2, 2, 2, 9, 4, 8), (1, 6, 3, 12, 12, 4)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_matches_the_reference_without_a_mask(shape, causal):
    compare(sdpa_attention, *tensors(*shape), None, causal)


@pytest.mark.parametrize("kind", ["padding", "query-key", "per-head"])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_the_reference_with_masks_and_rows_that_see_nothing(kind, causal):
    q, k, v = tensors(2, 4, 2, 6, 8, 8)
    g = torch.Generator().manual_seed(3)
    if kind == "padding":  # (batch, 1, 1, keys): the first row of the batch is all padding
        mask = torch.rand(2, 1, 1, 8, generator=g) > 0.3
        mask[0] = False
    elif kind == "query-key":
        mask = torch.rand(6, 8, generator=g) > 0.5
        mask[2] = False
    else:
        mask = torch.rand(2, 4, 6, 8, generator=g) > 0.5
        mask[1, 3, 0] = False
    out = compare(sdpa_attention, q, k, v, mask, causal)
    if kind == "padding":
        assert torch.all(out[0] == 0)


def test_bfloat16_matches_the_reference_within_bfloat16_rounding():
    q, k, v = tensors(2, 4, 2, 16, 16, 16, dtype=torch.bfloat16)
    compare(sdpa_attention, q, k, v, None, True, rtol=2e-2, atol=2e-2)


def test_worked_example_and_leading_dimensions():
    q = k = torch.eye(2)[None]
    v = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    torch.testing.assert_close(sdpa_attention(q, k, v, causal=True),
                               torch.tensor([[[1.0, 2.0], [2.3395, 3.3395]]]), atol=1e-4, rtol=0)
    q, k, v = tensors(1, 2, 2, 3, 5, 4)
    q5 = q.detach().expand(3, 1, 2, 3, 4)  # an extra batch dimension, broadcast against K and V
    torch.testing.assert_close(sdpa_attention(q5, k.detach(), v.detach(), causal=True),
                               reference(q5, k.detach(), v.detach(), causal=True))


def test_causal_uses_torch_is_causal_only_where_its_alignment_agrees(monkeypatch):
    calls = []
    real = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, is_causal=False, **kwargs):
        calls.append((attn_mask is None, is_causal, kwargs.get("enable_gqa", False)))
        return real(q, k, v, attn_mask=attn_mask, is_causal=is_causal, **kwargs)

    monkeypatch.setattr(sdpa_module.F, "scaled_dot_product_attention", spy)
    for n, m in ((8, 8), (1, 8), (3, 8)):
        q, k, v = tensors(1, 4, 2, n, m, 8)
        sdpa_attention(q, k, v, causal=True)
    # n == m: is_causal, no mask; n == 1: every key visible, nothing at all; n < m: a bottom-right mask
    assert calls == [(True, True, True), (True, False, True), (False, False, True)]


def test_without_torch_gqa_the_heads_are_expanded(monkeypatch):
    monkeypatch.setattr(sdpa_module, "TORCH_HAS_GQA", False)
    compare(sdpa_attention, *tensors(2, 6, 2, 5, 7, 4), None, True)


def test_bad_heads_and_missing_heads_dimension_are_named():
    q, k, v = tensors(1, 4, 3, 2, 2, 4)
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        sdpa_attention(q, k, v)
    with pytest.raises(ValueError, match="heads dimension"):
        sdpa_attention(q[0, 0], k[0, 0], v[0, 0])


def test_no_host_sync_and_a_fixed_operation_count_on_the_gpu_path():
    counts = []
    for batch in (2, 16):
        q, k, v = tensors(batch, 4, 2, 8, 8, 8, dtype=torch.float32)
        mask = torch.ones(batch, 1, 1, 8, dtype=torch.bool)
        with gpu_path_forced(), OpCounter() as counter:
            sdpa_attention(q, k, v, mask, causal=True).sum().backward()
        counts.append((counter.total, counter.syncs))
    assert counts[0] == counts[1] and counts[0][1] == 0


def test_backend_support_table_and_functions():
    assert BACKENDS == ("reference", "chunked", "sdpa", "flash")
    for name in ("reference", "chunked", "sdpa"):
        assert attention_backend_supports(name, "cpu", torch.float32, has_mask=True)
        assert not attention_backend_supports(name, "cpu", torch.int64, has_mask=False)
    assert not attention_backend_supports("flash", "cpu", torch.float32, has_mask=True)
    assert not attention_backend_supports("flash", "cpu", torch.bfloat16, has_mask=False)
    assert not attention_backend_supports("flash", "meta", torch.float32, has_mask=False)
    with pytest.raises(ValueError, match=r"unknown attention backend 'fast'; choose one of \('reference'"):
        attention_backend_supports("fast", "cpu", torch.float32, False)
    q, k, v = tensors(1, 2, 2, 5, 5, 4)
    from seqlab.model.chunked_attention import chunked_attention

    for fn in (reference, chunked_attention, sdpa_attention):  # one calling convention
        torch.testing.assert_close(fn(q, k, v, None, causal=True),
                                   reference(q, k, v, causal=True))
