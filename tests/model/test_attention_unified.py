"""One multi-head attention for the LM and the seq2seq Transformer (issue 17 item 4): cross-attention
against torch.nn.MultiheadAttention and a softmax oracle written here, grouped key/value heads,
key-padding masks, weights on request, bidirectional self-attention, the shared ReLU feed-forward and
residual helper, and checkpoints written by the code before the merge (tests/fixtures/
before_unified_attention, made by its make.py at commit 7ae4478) loading with the same outputs."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqlab.model.attention import MultiHeadAttention
from seqlab.model.ffn import ReLUFeedForward, make_ffn
from seqlab.model.residual import residual

pytestmark = pytest.mark.usefixtures("one_thread")
OLD = Path(__file__).resolve().parents[1] / "fixtures" / "before_unified_attention"
D, HEADS = 16, 4



def _with_pattern(attn, *args, **kwargs):
    """(output, attention weights) of one call, the weights read through the module's taps."""
    from seqlab.model.taps import Taps

    taps = Taps(read=["pattern"])
    return attn(*args, taps=taps, **kwargs), taps.cache["pattern"]

def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _attention(num_kv_heads=None, **kw):
    torch.manual_seed(0)
    return MultiHeadAttention(D, HEADS, num_kv_heads=num_kv_heads, dtype=torch.float64, **kw)


def softmax_oracle(attn, x, memory, key_mask=None, causal=False):
    """Output and weights of multi-head attention from the projection matrices, with torch.softmax:
    query head h reads key/value head h // (heads / kv_heads)."""
    B, n, _ = x.shape
    m, dh = memory.shape[1], attn.d_head
    q = (x @ attn.q_proj.weight.T).view(B, n, HEADS, dh).transpose(1, 2)
    k = (memory @ attn.k_proj.weight.T).view(B, m, -1, dh).transpose(1, 2)
    v = (memory @ attn.v_proj.weight.T).view(B, m, -1, dh).transpose(1, 2)
    group = HEADS // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-1, -2) / dh ** 0.5
    if key_mask is not None:
        scores = scores.masked_fill(~key_mask[:, None, None, :], float("-inf"))
    if causal:
        scores = scores.masked_fill(torch.ones(n, m, dtype=torch.bool).triu(1), float("-inf"))
    weights = torch.softmax(scores, -1)
    out = (weights @ v).transpose(1, 2).reshape(B, n, D)
    return out @ attn.output_proj.weight.T, weights


def test_cross_attention_equals_torch_multihead_attention_with_a_padding_mask():
    attn = _attention(causal=False)
    torch_attn = nn.MultiheadAttention(D, HEADS, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        torch_attn.in_proj_weight.copy_(torch.cat((attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight)))
        torch_attn.out_proj.weight.copy_(attn.output_proj.weight)
    x, memory = _randn(3, 5, D, seed=1).requires_grad_(), _randn(3, 7, D, seed=2).requires_grad_()
    mask = torch.arange(7)[None, :] < torch.tensor([7, 4, 1])[:, None]
    out, weights = _with_pattern(attn, x, memory=memory, key_padding_mask=mask)
    want, want_weights = torch_attn(x, memory, memory, key_padding_mask=~mask, need_weights=True,
                                    average_attn_weights=False)
    assert out.shape == (3, 5, D) and weights.shape == (3, HEADS, 5, 7)
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(weights, want_weights)
    assert weights[2, ..., 1:].abs().max() == 0  # only the first source position is real in row 2
    # the fast path (no weights) is the same, and so are the gradients
    fast = attn(x, memory=memory, key_padding_mask=mask)
    torch.testing.assert_close(fast, want)
    g = _randn(*fast.shape, seed=3)
    ours = torch.autograd.grad(fast, (x, memory, attn.k_proj.weight), g)
    theirs = torch.autograd.grad(want, (x, memory, torch_attn.in_proj_weight), g)
    torch.testing.assert_close(ours[0], theirs[0])
    torch.testing.assert_close(ours[1], theirs[1])
    torch.testing.assert_close(ours[2], theirs[2][D:2 * D])


@pytest.mark.parametrize("num_kv_heads", [2, 1])
def test_grouped_query_cross_attention_against_a_softmax_oracle(num_kv_heads):
    attn = _attention(num_kv_heads, causal=False)
    assert attn.k_proj.weight.shape == (num_kv_heads * D // HEADS, D)
    x, memory = _randn(2, 4, D, seed=4), _randn(2, 6, D, seed=5)
    mask = torch.tensor([[True] * 6, [True, True, True, False, False, False]])
    want, want_weights = softmax_oracle(attn, x, memory, mask)
    k, v = attn.keys_values(memory)  # computed once, as for incremental decoding
    assert k.shape == v.shape == (2, num_kv_heads, 6, D // HEADS)
    for out, weights in (_with_pattern(attn, x, memory=memory, key_padding_mask=mask),
                         _with_pattern(attn, x, memory_kv=(k, v), key_padding_mask=mask)):
        torch.testing.assert_close(out, want)
        torch.testing.assert_close(weights, want_weights)
    # one decoding step at a time reads the same cached keys/values
    steps = torch.cat([attn(x[:, t:t + 1], memory_kv=(k, v), key_padding_mask=mask) for t in range(4)], dim=1)
    torch.testing.assert_close(steps, want)


def test_bidirectional_self_attention_sees_every_position_and_causal_only_the_past():
    x = _randn(2, 6, D, seed=6)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    for causal in (False, True):
        attn = _attention(2, causal=causal)
        out, weights = _with_pattern(attn, x, key_padding_mask=mask)
        want, want_weights = softmax_oracle(attn, x, x, mask, causal=causal)
        torch.testing.assert_close(out, want)
        torch.testing.assert_close(weights, want_weights)
        changed = x.clone()
        changed[:, 5] += 1.0
        moved = (attn(changed) - attn(x))[:, :5].abs().max()
        assert (moved > 1e-3) if not causal else (moved == 0)


def test_cross_attention_misuse_is_refused_with_the_fix():
    x, memory = _randn(1, 2, D), _randn(1, 3, D)
    with pytest.raises(ValueError, match="build it with causal=False and without theta"):
        _attention()(x, memory=memory)  # causal (the default)
    with pytest.raises(ValueError, match="without theta"):
        MultiHeadAttention(D, HEADS, 8, 10000.0, causal=False, dtype=torch.float64)(x, memory=memory)
    cross = _attention(causal=False)
    with pytest.raises(ValueError, match="either as memory= .* or as memory_kv="):
        cross(x, memory=memory, memory_kv=cross.keys_values(memory))
    with pytest.raises(ValueError, match="no token_positions or kv_cache"):
        cross(x, torch.arange(2), memory=memory)
    with pytest.raises(ValueError, match="key padding mask covers 2 positions but there are 3 keys"):
        cross(x, memory=memory, key_padding_mask=torch.ones(1, 2, dtype=torch.bool))


def test_the_language_models_positional_signature():
    attn = MultiHeadAttention(D, HEADS, 8, 10000.0)
    assert attn.causal and attn.rope is not None
    assert set(attn.state_dict()) == {f"{p}.weight" for p in ("q_proj", "k_proj", "v_proj", "output_proj")}


def test_relu_feed_forward_is_the_papers_and_make_ffn_builds_each_kind():
    torch.manual_seed(0)
    ffn = make_ffn("relu", D, None, dtype=torch.float64)
    assert isinstance(ffn, ReLUFeedForward) and ffn.w1.weight.shape == (4 * D, D)
    x = _randn(3, D, seed=7).requires_grad_()
    out = ffn(x)
    want = F.linear(F.relu(F.linear(x, ffn.w1.weight)), ffn.w2.weight)
    torch.testing.assert_close(out, want)
    g = _randn(3, D, seed=8)
    torch.testing.assert_close(torch.autograd.grad(out, x, g)[0], torch.autograd.grad(want, x, g)[0])
    assert [type(make_ffn(kind, D, 32)).__name__ for kind in ("swiglu", "silu", "relu", "none")] == [
        "SwiGLU", "SiLUFeedForward", "ReLUFeedForward", "NoFeedForward"]
    with pytest.raises(ValueError, match=r"unknown ffn 'gelu'; expected one of \('swiglu', 'silu', 'relu', 'none'\)"):
        make_ffn("gelu", D, 32)


def test_residual_puts_the_norm_before_or_after_the_sublayer():
    norm, sublayer = nn.LayerNorm(D, dtype=torch.float64), nn.Linear(D, D, dtype=torch.float64)
    x = _randn(2, D, seed=9)
    torch.testing.assert_close(residual(x, norm, sublayer, "pre"), x + sublayer(norm(x)))
    torch.testing.assert_close(residual(x, norm, sublayer, "post"), norm(x + sublayer(x)))
    assert residual(torch.tensor(1.0), lambda h: 2 * h, lambda h: h + 1, "pre") == 4  # the docstring's example
    assert residual(torch.tensor(1.0), lambda h: 2 * h, lambda h: h + 1, "post") == 6


def test_seq2seq_layers_are_built_from_the_model_packages_pieces():
    from seqlab.seq2seq.transformer import TransformerSeq2Seq

    model = TransformerSeq2Seq(13, 11, D, HEADS, 1, 1, 24, 16, positional="rope")
    encoder, decoder = model.encoder.layers[0], model.decoder.layers[0]
    assert all(type(a) is MultiHeadAttention for a in (encoder.attn, decoder.self_attn, decoder.cross_attn))
    assert (encoder.attn.causal, decoder.self_attn.causal, decoder.cross_attn.causal) == (False, True, False)
    assert encoder.attn.rope is not None and decoder.self_attn.rope is not None and decoder.cross_attn.rope is None
    assert type(encoder.ffn) is ReLUFeedForward


def test_a_language_model_checkpoint_from_before_the_merge_loads_and_gives_the_same_logits():
    from seqlab.runs.checkpoint import load_model_from_checkpoint

    model, payload = load_model_from_checkpoint(OLD / "lm.pt")
    assert "attention" in payload["model_config"] and model.config.num_kv_heads == 2
    with torch.no_grad():
        for backend in ("auto", "reference", "sdpa"):
            model.set_attention(backend)
            torch.testing.assert_close(model(payload["extra"]["ids"]), payload["extra"]["logits"],
                                       atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["seq2seq_post_relu_sinusoidal", "seq2seq_pre_swiglu_rope"])
def test_a_seq2seq_checkpoint_from_before_the_merge_loads_and_gives_the_same_logits(name):
    """The old Seq2SeqConfig had no `attention` field; the state-dict keys are unchanged."""
    from seqlab.runs.checkpoint import load_payload, read_checkpoint
    from seqlab.seq2seq.build import build_model
    from seqlab.seq2seq.config import Seq2SeqConfig

    payload = read_checkpoint(OLD / f"{name}.pt")
    assert "attention" not in payload["model_config"]
    assert {"max_seq_len", "tie_output"} <= set(payload["model_config"])  # saved under the 0.1.0 names
    notes: list[str] = []
    model = build_model(Seq2SeqConfig.from_dict(payload["model_config"], notes=notes))
    assert model.config.attention == "auto"
    assert model.config.context_length == payload["model_config"]["max_seq_len"] and len(notes) == 2
    assert set(model.state_dict()) == set(payload["model"])
    assert load_payload(payload, model, source=name) == 5
    model.eval()
    e = payload["extra"]
    with torch.no_grad():
        for backend in ("auto", "reference", "sdpa"):
            model.set_attention(backend)
            torch.testing.assert_close(model(e["src"], e["tgt"], e["src_mask"], e["tgt_mask"]), e["logits"],
                                       atol=1e-5, rtol=1e-5)
