"""The work of an eager CPU training step, counted (not timed; speed is benchmarks/train_step.py's):
the attention kernel masks only the diagonal part of each causal query block (the keys every query
of the block sees need no -inf) and forms key and value gradients with batched GEMMs; the
cross-entropy backward writes each block into the gradient itself; the fused q/k/v projection's
gradient is joined by one cat, not by adding zero-padded copies. Values and gradients stay equal to
the reference's (an oracle in each test, and tests/model/test_attention.py, test_loss.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.instruments.op_count import OpCounter

import seqlab.model.chunked_attention as chunked_module
from seqlab.model.attention import scaled_dot_product_attention


class _ScoresTouched(TorchDispatchMode):
    """How many scores each aten op named in ``names`` writes (its first argument's numel); a
    masked_fill_ of one value per row (softmax's guard for a row with nothing visible) is not a
    score mask and is left out."""

    def __init__(self, names):
        super().__init__()
        self.names, self.counts = names, dict.fromkeys(names, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._opname
        if name in self.names and args[0].shape[-1] > 1:
            self.counts[name] += args[0].numel()
        return func(*args, **(kwargs or {}))


def test_a_causal_call_masks_only_each_blocks_diagonal_and_matches_the_reference(monkeypatch):
    monkeypatch.setattr(chunked_module, "KEEP_PROBS_SCORES", 0)  # the backward recomputes the scores too
    torch.manual_seed(0)
    batch, heads, n, d = 2, 3, 256, 8
    q, k, v = (torch.randn(batch, heads, n, d, dtype=torch.float64, requires_grad=True) for _ in range(3))
    blocks = chunked_module.query_blocks(n, n, causal=True)
    with _ScoresTouched({"masked_fill_", "baddbmm_"}) as seen:
        out = chunked_module.chunked_attention(q, k, v, causal=True)
        out.backward(torch.ones_like(out))
    # the oracle: per block, its queries times the keys from its first query's diagonal on, in the
    # forward and again in the backward's recomputed scores: keys before query_start + 1 are visible
    band = sum((b.query_end - b.query_start) * (b.key_end - (b.query_start + 1)) for b in blocks)
    assert seen.counts["masked_fill_"] == 2 * batch * heads * band
    full = sum((b.query_end - b.query_start) * b.key_end for b in blocks)
    assert 2 * band < full  # masking whole blocks did 2.5x more (160 keys per query on average, not 63)
    assert seen.counts["baddbmm_"] == 0  # no GEMM loop into strided gradient views
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    reference = scaled_dot_product_attention(q, k, v, torch.ones(n, n, dtype=torch.bool).tril())
    reference.backward(torch.ones_like(reference))
    torch.testing.assert_close(out, reference)
    for mine, theirs in zip(grads, (q.grad, k.grad, v.grad)):
        torch.testing.assert_close(mine, theirs)


def test_the_cross_entropy_backward_copies_no_block_and_matches_torch():
    torch.manual_seed(0)
    logits = torch.randn(300, 5000, requires_grad=True)
    targets = torch.randint(0, 5000, (300,))
    from seqlab.model.loss import cross_entropy

    loss = cross_entropy(logits, targets)
    with OpCounter() as counter:
        loss.backward()
    assert counter.ops["aten.copy_"] == 0 and counter.ops["aten.exp_"] > 1  # several blocks, none copied
    mine, logits.grad = logits.grad, None
    F.cross_entropy(logits, targets).backward()
    torch.testing.assert_close(mine, logits.grad)


def test_the_qkv_gradient_is_one_cat_not_zero_padded_slices():
    """Oracle for the values: HF Llama with the same weights (tests/model/test_gqa.py), whose q/k/v
    projections are separate; its gradients are seqlab's (the q/k rows in seqlab's RoPE order)."""
    from tests.model.test_gqa import SMALL, half_to_pairs, hf_llama, seqlab_from_hf

    hf = hf_llama(num_kv_heads=2, tie=False)
    model = seqlab_from_hf(hf, attention="chunked")
    ids = torch.randint(0, SMALL["vocab_size"], (2, 20), generator=torch.Generator().manual_seed(3))
    loss = model(ids).square().mean()
    with OpCounter() as counter:
        loss.backward()
    assert counter.ops["aten.slice_backward"] == 0 and counter.ops["aten.cat"] >= 2 * SMALL["num_layers"]
    hf(input_ids=ids, use_cache=False).logits.square().mean().backward()
    for mine, theirs in zip(model.layers, hf.model.layers):
        a = theirs.self_attn
        torch.testing.assert_close(mine.attn.q_proj.weight.grad, half_to_pairs(a.q_proj.weight.grad, 8))
        torch.testing.assert_close(mine.attn.k_proj.weight.grad, half_to_pairs(a.k_proj.weight.grad, 2))
        torch.testing.assert_close(mine.attn.v_proj.weight.grad, a.v_proj.weight.grad)
