"""TransformerBlock and TransformerLM: names, oracles, causality, errors, ablations, KV cache."""

import pytest
import torch
import torch.nn.functional as F

from seqlab.model import ModelConfig, TransformerBlock, TransformerLM
from seqlab.training import AdamW, cross_entropy

SMALL = dict(vocab_size=37, context_length=16, d_model=32, num_layers=2, num_heads=4, d_ff=64, rope_theta=10000.0)
ABLATIONS = [
    {},
    {"norm": "none"},
    {"norm_position": "post"},
    {"positional": "nope"},
    {"ffn": "silu"},
]


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_state_dict_keys_are_exactly_the_assignment_names():
    model = TransformerLM(**SMALL)
    per_layer = ["attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight", "attn.output_proj.weight",
                 "ln1.weight", "ffn.w1.weight", "ffn.w2.weight", "ffn.w3.weight", "ln2.weight"]
    expected = {"token_embeddings.weight", "ln_final.weight", "lm_head.weight"}
    expected |= {f"layers.{i}.{name}" for i in range(2) for name in per_layer}
    state = model.state_dict()
    assert set(state) == expected
    assert state["layers.1.attn.q_proj.weight"].shape == (32, 32)
    assert state["layers.0.ffn.w1.weight"].shape == (64, 32)
    assert state["lm_head.weight"].shape == (37, 32)


def test_load_state_dict_is_strict():
    model, other = TransformerLM(**SMALL), TransformerLM(**SMALL)
    other.load_state_dict(model.state_dict())
    ids = torch.randint(0, 37, (2, 8))
    torch.testing.assert_close(other(ids), model(ids))
    state = model.state_dict()
    del state["layers.0.attn.q_proj.weight"]
    with pytest.raises(RuntimeError, match="q_proj"):
        other.load_state_dict(state)
    state = model.state_dict()
    state["layers.0.attn.qkv.weight"] = torch.zeros(96, 32)
    with pytest.raises(RuntimeError, match="qkv"):
        other.load_state_dict(state)


def block_oracle(block, x, positions):
    """Pre-norm block with torch.nn.functional pieces: z = x + attn(ln1 x); y = z + ffn(ln2 z)."""
    a = block.attn
    h = F.rms_norm(x, (x.shape[-1],), block.ln1.weight, 1e-5)
    b, s, d = x.shape
    def heads(w):
        return F.linear(h, w).view(b, s, a.num_heads, a.d_head).transpose(1, 2)
    q, k, v = heads(a.q_proj.weight), heads(a.k_proj.weight), heads(a.v_proj.weight)
    q, k = a.rope(q, positions), a.rope(k, positions)  # RoPE itself is checked against matrices elsewhere
    att = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
    z = x + F.linear(att, a.output_proj.weight)
    h2 = F.rms_norm(z, (d,), block.ln2.weight, 1e-5)
    f = block.ffn
    return z + F.linear(F.silu(F.linear(h2, f.w1.weight)) * F.linear(h2, f.w3.weight), f.w2.weight)


def test_block_matches_functional_oracle():
    block = TransformerBlock(32, 4, 64, 16, 10000.0)
    assert {n.split(".")[0] for n, _ in block.named_parameters()} == {"attn", "ffn", "ln1", "ln2"}
    x = torch.randn(2, 7, 32)
    torch.testing.assert_close(block(x), block_oracle(block, x, torch.arange(7)), atol=1e-5, rtol=1e-5)


def test_lm_matches_functional_oracle():
    model = TransformerLM(**SMALL)
    ids = torch.randint(0, 37, (3, 9))
    x = F.embedding(ids, model.token_embeddings.weight)
    for block in model.layers:
        x = block_oracle(block, x, torch.arange(9))
    logits = F.linear(F.rms_norm(x, (32,), model.ln_final.weight, 1e-5), model.lm_head.weight)
    out = model(ids)
    assert out.shape == (3, 9, 37)
    torch.testing.assert_close(out, logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("ablation", ABLATIONS, ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()) or "default")
def test_changing_a_future_token_never_changes_earlier_logits(ablation):
    model = TransformerLM(**SMALL, **ablation)
    ids = torch.randint(0, 37, (2, 12))
    changed = ids.clone()
    changed[:, 7] = (changed[:, 7] + 1) % 37
    a, b = model(ids), model(changed)
    torch.testing.assert_close(a[:, :7], b[:, :7])
    assert not torch.allclose(a[:, 7:], b[:, 7:])


def test_clear_errors_for_long_sequences_and_out_of_vocab_ids():
    model = TransformerLM(**SMALL)
    model(torch.randint(0, 37, (1, 16)))  # exactly the context works
    model(torch.randint(0, 37, (1, 3)))   # shorter works
    with pytest.raises(ValueError, match="sequence length 17 exceeds the model's context_length 16"):
        model(torch.randint(0, 37, (1, 17)))
    with pytest.raises(ValueError, match=r"token id 37 at position 2 is outside the vocabulary"):
        model(torch.tensor([[1, 2, 37]]))
    with pytest.raises(ValueError, match=r"\(batch, seq\)"):
        model(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="token position 16"):
        model(torch.tensor([[1, 2]]), token_positions=torch.tensor([15, 16]))


def test_config_defaults_validation_and_from_config():
    cfg = ModelConfig(vocab_size=100, context_length=8, d_model=512, num_layers=1, num_heads=8)
    assert cfg.d_ff == 1344 and cfg.norm == "rmsnorm" and cfg.positional == "rope" and cfg.ffn == "swiglu"
    assert ModelConfig(100, 8, 64, 1, 4, ffn="silu").d_ff == 256
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(100, 8, 30, 1, 4)
    with pytest.raises(ValueError, match="norm_position"):
        ModelConfig(100, 8, 32, 1, 4, norm_position="middle")
    with pytest.raises(ValueError, match="ffn"):
        ModelConfig(100, 8, 32, 1, 4, ffn="gelu")
    model = TransformerLM.from_config(ModelConfig(**SMALL, positional="nope"))
    assert model.config.positional == "nope" and model.layers[0].attn.rope is None


@pytest.mark.parametrize("ablation", ABLATIONS[1:], ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()))
def test_each_ablation_has_expected_structure_shapes_and_trains(ablation):
    model = TransformerLM(**{**SMALL, "d_ff": None}, **ablation)
    names = set(model.state_dict())
    if ablation.get("norm") == "none":
        assert not any("ln" in n for n in names)
    if ablation.get("norm_position") == "post":
        assert "ln_final.weight" not in names and "layers.0.ln1.weight" in names
        x = torch.randn(1, 3, 32)
        block = model.layers[0]
        z = F.rms_norm(x + block.attn(x), (32,), block.ln1.weight, 1e-5)
        torch.testing.assert_close(block(x), F.rms_norm(z + block.ffn(z), (32,), block.ln2.weight, 1e-5))
    if ablation.get("ffn") == "silu":
        assert "layers.0.ffn.w3.weight" not in names and model.layers[0].ffn.w1.weight.shape == (128, 32)
    ids = torch.randint(0, 37, (4, 16))
    assert model(ids).shape == (4, 16, 37)
    optimizer = AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(25):
        loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0], losses


def test_small_lm_overfits_one_batch():
    model = TransformerLM(vocab_size=37, context_length=16, d_model=32, num_layers=2, num_heads=4)
    ids = torch.randint(0, 37, (4, 17))
    optimizer = AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    for _ in range(60):
        loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    assert (model(ids[:, :-1]).argmax(-1) == ids[:, 1:]).all()


def decode_with_cache(model, ids, prefill, padding_mask=None):
    cache = model.new_kv_cache()
    pm = None if padding_mask is None else padding_mask[:, :prefill]
    outs = [model(ids[:, :prefill], kv_cache=cache, padding_mask=pm)]
    assert cache.length == prefill
    for t in range(prefill, ids.shape[1]):
        pm = None if padding_mask is None else padding_mask[:, t:t + 1]
        outs.append(model(ids[:, t:t + 1], kv_cache=cache, padding_mask=pm))
    assert cache.length == ids.shape[1]
    return torch.cat(outs, dim=1)


@pytest.mark.parametrize("ablation", ABLATIONS, ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()) or "default")
def test_kv_cache_decoding_equals_full_recompute(ablation):
    model = TransformerLM(**SMALL, **ablation)
    ids = torch.randint(0, 37, (2, 16))
    with torch.no_grad():
        full = model(ids)
        for prefill in (1, 5):
            torch.testing.assert_close(decode_with_cache(model, ids, prefill), full, atol=1e-5, rtol=1e-5)


def test_kv_cache_refuses_to_grow_past_context():
    model = TransformerLM(**SMALL)
    cache = model.new_kv_cache()
    model(torch.randint(0, 37, (1, 15)), kv_cache=cache)
    model(torch.randint(0, 37, (1, 1)), kv_cache=cache)
    with pytest.raises(ValueError, match="16 cached \\+ 1 new positions exceed context_length 16"):
        model(torch.randint(0, 37, (1, 1)), kv_cache=cache)


def test_padding_mask_left_padded_batch_matches_unpadded_rows_with_cache():
    model = TransformerLM(**SMALL)
    short = torch.randint(0, 37, (1, 6))
    long = torch.randint(0, 37, (1, 9))
    pad = 3
    ids = torch.cat([torch.cat([torch.zeros(1, pad, dtype=torch.long), short], 1), long])
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[0, :pad] = False
    # left-padded row: positions count real tokens only
    positions = (mask.cumsum(1) - 1).clamp_min(0)
    with torch.no_grad():
        padded = model(ids, token_positions=positions, padding_mask=mask)
        torch.testing.assert_close(padded[0, pad:], model(short)[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(padded[1], model(long)[0], atol=1e-5, rtol=1e-5)
        assert torch.isfinite(padded).all()
        # the cache remembers which keys were padding
        cache = model.new_kv_cache()
        model(ids[:, :7], token_positions=positions[:, :7], kv_cache=cache, padding_mask=mask[:, :7])
        assert cache.key_padding_mask.tolist() == mask[:, :7].tolist()
        step = model(ids[:, 7:8], token_positions=positions[:, 7:8], kv_cache=cache)
        torch.testing.assert_close(step[:, 0], padded[:, 7], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("attention", ["chunked", "reference"])
def test_bfloat16_autocast_training_step_stays_close_to_float32(attention):
    model = TransformerLM(**SMALL, attention=attention)
    ids = torch.randint(0, 37, (2, 16))
    loss32 = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
    grads32 = torch.autograd.grad(loss32, list(model.parameters()))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(ids[:, :-1])
        loss16 = cross_entropy(logits, ids[:, 1:])
    assert logits.dtype == torch.bfloat16 and loss16.dtype == torch.float32
    grads16 = torch.autograd.grad(loss16, list(model.parameters()))
    assert abs(loss16.item() - loss32.item()) < 0.02 * loss32.item()
    for g16, g32 in zip(grads16, grads32):
        assert g16.dtype == torch.float32 and torch.isfinite(g16).all()
        assert (g16 - g32).norm() <= 0.1 * g32.norm() + 1e-6


@pytest.mark.slow
def test_torch_compile_matches_eager_forward_and_gradients():
    model = TransformerLM(**SMALL)
    ids = torch.randint(0, 37, (2, 16))

    def loss_fn(x, y):
        return cross_entropy(model(x), y)

    eager_loss = loss_fn(ids[:, :-1], ids[:, 1:])
    eager_grads = torch.autograd.grad(eager_loss, list(model.parameters()))
    compiled_loss = torch.compile(loss_fn)(ids[:, :-1], ids[:, 1:])
    compiled_grads = torch.autograd.grad(compiled_loss, list(model.parameters()))
    torch.testing.assert_close(compiled_loss, eager_loss, atol=1e-5, rtol=1e-5)
    for a, b in zip(compiled_grads, eager_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_tinystories_parameter_count_on_meta_device():
    model = TransformerLM(10_000, 256, 512, 4, 16, None, 10000.0, device="meta")
    V, d, L, d_ff = 10_000, 512, 4, 1344
    expected = 2 * V * d + L * (4 * d * d + 3 * d * d_ff + 2 * d) + d  # embeddings, head, blocks, final norm
    assert model.config.d_ff == d_ff
    assert model.num_parameters() == expected == 22_696_448
