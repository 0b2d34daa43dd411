"""TransformerSeq2Seq against torch.nn.Transformer (weights copied, float64), KV-cached decoding
against the full recompute, no leaks, attention maps, options and gradcheck.

Note on the oracle: torch.nn.Transformer always builds a final encoder norm and a final decoder
norm. In pre-norm (norm_first=True) they are the paper-free "ln_final" our pre-norm model also has,
so we copy ours into them. In post-norm the original Transformer has no final norm, so the test
sets nn.Transformer's encoder.norm and decoder.norm to None (TransformerEncoder/Decoder accept
norm=None) before comparing.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqlab.model.taps import attention_patterns
from seqlab.seq2seq.build import build_model, num_parameters
from seqlab.seq2seq.config import PAD_ID, Seq2SeqConfig
from seqlab.seq2seq.transformer import TransformerSeq2Seq

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")]

D, HEADS, D_FF, SRC_V, TGT_V = 16, 4, 24, 13, 11


def _model(norm_position="post", num_encoder_layers=2, num_decoder_layers=2, **kw):
    torch.manual_seed(0)
    model = TransformerSeq2Seq(SRC_V, TGT_V, D, HEADS, num_encoder_layers, num_decoder_layers, D_FF, 32,
                               norm_position=norm_position, dtype=torch.float64, **kw)
    with torch.no_grad():  # non-trivial norm parameters, so their copy is tested too
        for name, p in model.named_parameters():
            if ".ln" in name:
                p.add_(0.3 * torch.randn_like(p))
    return model


def _batch():
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, SRC_V, (3, 7), generator=g)
    tgt = torch.randint(4, TGT_V, (3, 6), generator=g)
    src_mask = torch.arange(7)[None, :] < torch.tensor([7, 4, 2])[:, None]
    tgt_mask = torch.arange(6)[None, :] < torch.tensor([6, 6, 3])[:, None]
    return src.masked_fill(~src_mask, PAD_ID), tgt.masked_fill(~tgt_mask, PAD_ID), src_mask, tgt_mask


def _copy_attention(ours, theirs: nn.MultiheadAttention):
    theirs.in_proj_weight.copy_(torch.cat((ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight)))
    theirs.out_proj.weight.copy_(ours.output_proj.weight)


def _oracle(model: TransformerSeq2Seq, pre: bool) -> nn.Transformer:
    n_enc, n_dec = len(model.encoder.layers), len(model.decoder.layers)
    oracle = nn.Transformer(D, HEADS, n_enc, n_dec, D_FF, dropout=0.0, batch_first=True, norm_first=pre,
                            dtype=torch.float64)
    with torch.no_grad():
        for name, p in oracle.named_parameters():
            if name.endswith("bias") and ("proj" in name or "linear" in name):
                p.zero_()  # our Linear layers have no bias
        for ours, theirs in zip(model.encoder.layers, oracle.encoder.layers):
            _copy_attention(ours.attn, theirs.self_attn)
            theirs.linear1.weight.copy_(ours.ffn.w1.weight)
            theirs.linear2.weight.copy_(ours.ffn.w2.weight)
            for a, b in ((ours.ln1, theirs.norm1), (ours.ln2, theirs.norm2)):
                b.weight.copy_(a.weight)
                b.bias.copy_(a.bias)
        for ours, theirs in zip(model.decoder.layers, oracle.decoder.layers):
            _copy_attention(ours.self_attn, theirs.self_attn)
            _copy_attention(ours.cross_attn, theirs.multihead_attn)
            theirs.linear1.weight.copy_(ours.ffn.w1.weight)
            theirs.linear2.weight.copy_(ours.ffn.w2.weight)
            for a, b in ((ours.ln1, theirs.norm1), (ours.ln2, theirs.norm2), (ours.ln3, theirs.norm3)):
                b.weight.copy_(a.weight)
                b.bias.copy_(a.bias)
        if pre:
            for ours, theirs in ((model.encoder.ln_final, oracle.encoder.norm),
                                 (model.decoder.ln_final, oracle.decoder.norm)):
                theirs.weight.copy_(ours.weight)
                theirs.bias.copy_(ours.bias)
    if not pre:
        oracle.encoder.norm = None
        oracle.decoder.norm = None
    return oracle


def _sinusoids(n):
    table = torch.zeros(n, D, dtype=torch.float64)
    for pos in range(n):
        for i in range(0, D, 2):
            table[pos, i] = math.sin(pos / 10000 ** (i / D))
            table[pos, i + 1] = math.cos(pos / 10000 ** (i / D))
    return table


def _oracle_logits(model, oracle, src, tgt, src_mask, tgt_mask):
    src_x = F.embedding(src, model.src_embeddings.weight) * math.sqrt(D) + _sinusoids(src.shape[1])
    tgt_x = F.embedding(tgt, model.tgt_embeddings.weight) * math.sqrt(D) + _sinusoids(tgt.shape[1])
    T = tgt.shape[1]
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = may NOT attend
    out = oracle(src_x, tgt_x, tgt_mask=causal, src_key_padding_mask=~src_mask,
                 tgt_key_padding_mask=~tgt_mask, memory_key_padding_mask=~src_mask, tgt_is_causal=True)
    return F.linear(out, model.lm_head.weight)


@pytest.mark.parametrize("norm_position", ["post", "pre"])
@pytest.mark.parametrize("layers", [(2, 2), (1, 3)])
def test_matches_torch_nn_transformer_with_padding_masks(norm_position, layers):
    model = _model(norm_position, *layers)
    oracle = _oracle(model, norm_position == "pre")
    oracle.train()  # no fast path (it would return nested/zeroed rows for padded positions)
    src, tgt, src_mask, tgt_mask = _batch()
    got = model(src, tgt, src_mask, tgt_mask)
    want = _oracle_logits(model, oracle, src, tgt, src_mask, tgt_mask)
    assert got.shape == (3, 6, TGT_V)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # gradients agree too
    g = torch.randn_like(got)
    ours = torch.autograd.grad(got, model.decoder.layers[0].cross_attn.k_proj.weight, g)[0]
    theirs = torch.autograd.grad(want, oracle.decoder.layers[0].multihead_attn.in_proj_weight, g)[0][D:2 * D]
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_attention_patterns_equal_torch_cross_attention_weights():
    model = _model("post")
    oracle = _oracle(model, False)
    src, tgt, src_mask, tgt_mask = _batch()
    captured = []
    for layer in oracle.decoder.layers:
        layer.multihead_attn.register_forward_pre_hook(lambda m, args, kwargs: captured.append((m, args, kwargs)),
                                                       with_kwargs=True)
    _oracle_logits(model, oracle, src, tgt, src_mask, tgt_mask)
    maps = attention_patterns(model, src, tgt, src_mask, tgt_mask)
    assert len(maps) == 2 and all(m.shape == (3, HEADS, 6, 7) for m in maps)
    for ours, (module, args, kwargs) in zip(maps, captured):
        _, want = module(*args, key_padding_mask=kwargs["key_padding_mask"], need_weights=True,
                         average_attn_weights=False)
        torch.testing.assert_close(ours, want)
    torch.testing.assert_close(maps[0].sum(-1), torch.ones(3, HEADS, 6, dtype=torch.float64))
    assert maps[0][1, ..., 4:].abs().max() == 0


VARIANTS = [
    dict(),
    dict(norm_position="pre", norm="rmsnorm", ffn="swiglu"),
    dict(positional="learned", shared_embeddings=True, tie_embeddings=True),
    dict(positional="rope", norm_position="pre"),
]


def _variant(kw):
    torch.manual_seed(1)
    vocab = SRC_V if kw.get("shared_embeddings") else TGT_V
    config = Seq2SeqConfig("transformer", SRC_V, vocab, d_model=D, num_heads=HEADS, d_ff=D_FF, context_length=16, **kw)
    return build_model(config, dtype=torch.float64)


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(f"{v}" for v in kw.values()) or "default")
def test_kv_cached_decoding_equals_full_recompute(kw):
    model = _variant(kw)
    src, tgt, src_mask, _ = _batch()
    want = model(src, tgt, src_mask)
    state = model.encode(src, src_mask)
    for t in range(tgt.shape[1]):
        logits, state = model.decode_step(state, tgt[:, t])
        torch.testing.assert_close(logits, want[:, t])
    assert state.length == tgt.shape[1]
    # reordering rows of the state reorders the next step's logits
    rows = torch.tensor([2, 0, 0])
    state2 = model.encode(src, src_mask)
    for t in range(3):
        _, state2 = model.decode_step(state2, tgt[:, t])
    logits, _ = model.decode_step(state2.select(rows), tgt[rows, 3])
    torch.testing.assert_close(logits, want[rows, 3])


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(f"{v}" for v in kw.values()) or "default")
def test_no_leaks(kw):
    model = _variant(kw)
    src, tgt, src_mask, _ = _batch()
    base = model(src, tgt, src_mask)
    future = tgt.clone()
    future[:, 4] = (tgt[:, 4] - 3) % 7 + 4
    after = model(src, future, src_mask)
    torch.testing.assert_close(after[:, :4], base[:, :4])
    assert (after[:, 4:] - base[:, 4:]).abs().max() > 1e-6
    padded = src.clone()
    padded[1, 4:], padded[2, 2:] = 5, 9
    torch.testing.assert_close(model(padded, tgt, src_mask), base)
    real = src.clone()
    real[2, 1] = (src[2, 1] - 3) % 9 + 4
    changed = model(real, tgt, src_mask)
    assert (changed[2] - base[2]).abs().max() > 1e-6
    torch.testing.assert_close(changed[:2], base[:2])  # other rows untouched
    # the cross-attention output itself moves with a real source token
    layer = model.decoder.layers[0]
    x = torch.randn(3, 6, D, dtype=torch.float64)
    outs = [layer.cross_attn(x, memory_kv=layer.cross_attn.keys_values(
        model.encode_memory(s, src_mask)), key_padding_mask=src_mask) for s in (src, real)]
    assert (outs[0][2] - outs[1][2]).abs().max() > 1e-6


def test_gradcheck_float64_through_the_source_embeddings():
    torch.manual_seed(2)
    model = TransformerSeq2Seq(6, 6, 4, 2, 1, 1, 6, 8, norm_position="pre", dtype=torch.float64)
    src_emb = torch.randn(1, 3, 4, dtype=torch.float64, requires_grad=True)
    tgt = torch.tensor([[1, 4, 5]])
    mask = torch.tensor([[True, True, False]])
    src = torch.tensor([[4, 5, 0]])

    def through(e):  # the source embedding rows replaced by e with a forward hook written here
        hook = model.src_embeddings.register_forward_hook(lambda module, args, out: e)
        try:
            return model(src, tgt, mask)
        finally:
            hook.remove()
    assert torch.autograd.gradcheck(through, (src_emb,))


def test_state_dict_keys_follow_the_contract():
    post = set(_model("post", 1, 1).state_dict())
    pre = set(_model("pre", 1, 1).state_dict())
    expected = {"src_embeddings.weight", "tgt_embeddings.weight", "lm_head.weight"}
    for p in ("q_proj", "k_proj", "v_proj", "output_proj"):
        expected |= {f"encoder.layers.0.attn.{p}.weight", f"decoder.layers.0.self_attn.{p}.weight",
                     f"decoder.layers.0.cross_attn.{p}.weight"}
    for w in ("w1", "w2"):
        expected |= {f"encoder.layers.0.ffn.{w}.weight", f"decoder.layers.0.ffn.{w}.weight"}
    for ln in ("ln1", "ln2"):
        expected |= {f"encoder.layers.0.{ln}.weight", f"encoder.layers.0.{ln}.bias"}
    for ln in ("ln1", "ln2", "ln3"):
        expected |= {f"decoder.layers.0.{ln}.weight", f"decoder.layers.0.{ln}.bias"}
    assert post == expected
    finals = {f"{s}.ln_final.{p}" for s in ("encoder", "decoder") for p in ("weight", "bias")}
    assert pre == expected | finals


def test_positions_beyond_context_length_are_reported():
    for positional in ("sinusoidal", "learned", "rope"):
        model = _variant(dict(positional=positional))
        with pytest.raises(ValueError, match="context_length=16"):
            model(torch.full((1, 17), 5), torch.full((1, 2), 5))


def test_embeddings_scale_and_parameter_count():
    model = _variant({})
    emb = model.src_embeddings.weight.detach()
    assert abs(emb.std().item() * math.sqrt(D) - 0.9866) < 0.15  # unit size after * sqrt(d_model)
    per_layer_enc = 4 * D * D + 2 * D * D_FF + 4 * D
    per_layer_dec = 8 * D * D + 2 * D * D_FF + 6 * D
    want = (SRC_V + 2 * TGT_V) * D + 2 * per_layer_enc + 2 * per_layer_dec
    assert num_parameters(model) == want
