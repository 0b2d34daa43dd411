"""Grouped-query attention (num_kv_heads) and tied embeddings (tie_embeddings).

Oracles computed here: Hugging Face LlamaForCausalLM with copied weights, torch's
F.scaled_dot_product_attention on keys/values repeated per query head, torch autograd on an untied
copy of a tied model, and the full no-cache forward for KV-cache decoding.
"""

import pytest
import torch
import torch.nn.functional as F

import seqlab.model.chunked_attention as chunked_module
from seqlab.model import ModelConfig, MultiHeadAttention, TransformerLM
from seqlab.model.attention import scaled_dot_product_attention
from seqlab.model.attention_inputs import causal_mask
from seqlab.model.chunked_attention import chunked_attention

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = dict(vocab_size=61, context_length=24, d_model=64, num_layers=2, num_heads=8, d_ff=96)
BACKENDS = {"reference": scaled_dot_product_attention, "chunked": chunked_attention}


def hf_llama(num_kv_heads: int, tie: bool, seed: int = 0):
    """A random fp32 LlamaForCausalLM of SMALL's shapes (eager attention, RoPE theta 10000)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=SMALL["vocab_size"], hidden_size=SMALL["d_model"], intermediate_size=SMALL["d_ff"],
        num_hidden_layers=SMALL["num_layers"], num_attention_heads=SMALL["num_heads"],
        num_key_value_heads=num_kv_heads, max_position_embeddings=SMALL["context_length"],
        rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        hidden_act="silu", attention_bias=False, mlp_bias=False, tie_word_embeddings=tie,
        attn_implementation="eager",
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # larger than HF's std 0.02 init, so attention rows are far from uniform
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.2)
    return model


def half_to_pairs(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """Rows of a q/k projection from HF's RoPE layout (dim i rotates with dim i + d/2 of its head) to
    seqlab's (dim 2i with 2i+1): per head, new row 2i = old row i and new row 2i+1 = old row i + d/2."""
    d_head = weight.shape[0] // heads
    order = torch.stack((torch.arange(d_head // 2), torch.arange(d_head // 2) + d_head // 2), dim=1).flatten()
    return weight.view(heads, d_head, -1)[:, order].reshape(weight.shape)


def seqlab_from_hf(hf, **kwargs) -> TransformerLM:
    cfg = hf.config
    model = TransformerLM(**SMALL, num_kv_heads=cfg.num_key_value_heads, tie_embeddings=cfg.tie_word_embeddings,
                          **kwargs).eval()
    state = {"token_embeddings.weight": hf.model.embed_tokens.weight, "ln_final.weight": hf.model.norm.weight,
             "lm_head.weight": hf.lm_head.weight}
    for i, layer in enumerate(hf.model.layers):
        a, m = layer.self_attn, layer.mlp
        state.update({
            f"layers.{i}.attn.q_proj.weight": half_to_pairs(a.q_proj.weight, cfg.num_attention_heads),
            f"layers.{i}.attn.k_proj.weight": half_to_pairs(a.k_proj.weight, cfg.num_key_value_heads),
            f"layers.{i}.attn.v_proj.weight": a.v_proj.weight,
            f"layers.{i}.attn.output_proj.weight": a.o_proj.weight,
            f"layers.{i}.ln1.weight": layer.input_layernorm.weight,
            f"layers.{i}.ln2.weight": layer.post_attention_layernorm.weight,
            f"layers.{i}.ffn.w1.weight": m.gate_proj.weight,
            f"layers.{i}.ffn.w2.weight": m.down_proj.weight,
            f"layers.{i}.ffn.w3.weight": m.up_proj.weight,
        })
    model.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=True)
    return model


@pytest.mark.parametrize("num_kv_heads", [8, 2, 1], ids=["mha", "gqa", "mqa"])
@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("attention", ["reference", "chunked"])
def test_logits_equal_hf_llama_with_copied_weights(num_kv_heads, tie, attention):
    hf = hf_llama(num_kv_heads, tie)
    model = seqlab_from_hf(hf, attention=attention)
    assert model.layers[0].attn.k_proj.weight.shape == (num_kv_heads * 8, 64)
    assert (model.lm_head.weight is model.token_embeddings.weight) == tie
    assert model.num_parameters() == sum(p.numel() for p in hf.parameters())
    ids = torch.randint(0, SMALL["vocab_size"], (2, 20), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expected = hf(input_ids=ids, use_cache=False).logits
        got = model(ids)
    assert expected.abs().max() > 1.0  # not a near-zero comparison
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def repeated_kv_oracle(Q, K, V, mask, causal):
    """F.scaled_dot_product_attention with each key/value head repeated for its query heads, by index:
    query head h of Q (..., heads, n, d) reads K[..., h // group, :, :]."""
    heads, kv_heads = Q.shape[-3], K.shape[-3]
    index = torch.arange(heads) // (heads // kv_heads)
    K, V = K[..., index, :, :], V[..., index, :, :]
    n, m = Q.shape[-2], K.shape[-2]
    full = causal_mask(n, m) if causal else torch.ones(n, m, dtype=torch.bool)
    return F.scaled_dot_product_attention(Q, K, V, attn_mask=full if mask is None else full & mask)


@pytest.mark.parametrize("kv_heads", [2, 1])
@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("scores_per_chunk", [1 << 18, 40])
def test_grouped_backends_equal_repeated_keys_in_values_and_gradients(monkeypatch, name, kv_heads, scores_per_chunk):
    """Q (batch, kv_heads, group, n, d) against K, V (batch, kv_heads, 1, m, d): causal with cached keys,
    with and without padding; small chunks and causal query blocks exercise every path of the kernel."""
    monkeypatch.setattr(chunked_module, "CAUSAL_MIN_QUERIES", 4)
    monkeypatch.setattr(chunked_module, "SCORES_PER_CHUNK", scores_per_chunk)
    g = torch.Generator().manual_seed(0)
    heads, group, n, m = 6, 6 // kv_heads, 10, 13
    Q = torch.randn(2, heads, n, 8, dtype=torch.float64, generator=g, requires_grad=True)
    K = torch.randn(2, kv_heads, m, 8, dtype=torch.float64, generator=g, requires_grad=True)
    V = torch.randn(2, kv_heads, m, 5, dtype=torch.float64, generator=g, requires_grad=True)
    padding = torch.rand(2, 1, 1, m, generator=g) > 0.3
    padding[0, ..., :] = False  # a sequence with no real key: zero output rows
    padding[1, ..., 0] = True
    attend = BACKENDS[name]
    for pad in (None, padding):
        grouped_pad = None if pad is None else pad[..., None, :, :]  # (batch, 1, 1, 1, keys)
        out = attend(Q.unflatten(1, (kv_heads, group)), K[:, :, None], V[:, :, None], grouped_pad, causal=True)
        out = out.flatten(1, 2)
        grad = torch.randn(out.shape, dtype=out.dtype, generator=g)
        got = torch.autograd.grad(out, (Q, K, V), grad)
        ref = repeated_kv_oracle(Q, K, V, pad, causal=True)
        if pad is not None:
            ref = ref.masked_fill(~pad.any(-1, keepdim=True), 0.0)  # F gives NaN rows where seqlab gives 0
        expected = torch.autograd.grad(ref, (Q, K, V), grad)
        torch.testing.assert_close(out, ref)
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b)


def test_chunked_kernel_groups_queries_instead_of_copying_keys():
    """Grouped keys/values are one slice per key/value head (the group's queries are extra rows)."""
    Q, K, V = torch.zeros(2, 3, 4, 5, 8), torch.zeros(2, 3, 1, 7, 8), torch.zeros(2, 3, 1, 7, 8)
    assert chunked_module.query_group(torch.Size((2, 3, 4)), K, V, None) == 4
    assert chunked_module.query_group(torch.Size((2, 3, 4)), K, V, torch.ones(2, 1, 1, 5, 7, dtype=torch.bool)) == 4
    # a mask that differs per query head of a group, or keys per query head: no grouping
    assert chunked_module.query_group(torch.Size((2, 3, 4)), K, V, torch.ones(2, 1, 4, 5, 7, dtype=torch.bool)) == 1
    assert chunked_module.query_group(torch.Size((2, 3, 4)), torch.zeros(2, 3, 4, 7, 8), V, None) == 1
    torch.testing.assert_close(chunked_attention(Q, K, V).shape, (2, 3, 4, 5, 8))


@pytest.mark.parametrize("attention", ["reference", "chunked"])
def test_attention_module_equals_the_per_head_formula_with_shared_key_heads(attention):
    """MultiHeadAttention(num_kv_heads=2) against a per-query-head loop over F.sdpa (no RoPE)."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(32, 8, num_kv_heads=2, attention=attention)
    x = torch.randn(3, 9, 32)
    out = attn(x)
    q = (x @ attn.q_proj.weight.T).view(3, 9, 8, 4)
    k = (x @ attn.k_proj.weight.T).view(3, 9, 2, 4)
    v = (x @ attn.v_proj.weight.T).view(3, 9, 2, 4)
    heads = [F.scaled_dot_product_attention(q[:, :, h], k[:, :, h // 4], v[:, :, h // 4], is_causal=True)
             for h in range(8)]
    expected = torch.stack(heads, dim=2).reshape(3, 9, 32) @ attn.output_proj.weight.T
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("changes", [dict(num_kv_heads=2), dict(num_kv_heads=1, tie_embeddings=True)],
                         ids=["gqa", "mqa-tied"])
@pytest.mark.parametrize("attention", ["reference", "chunked"])
def test_kv_cache_holds_kv_heads_and_decoding_equals_the_full_forward(changes, attention):
    torch.manual_seed(0)
    model = TransformerLM(**SMALL, **changes, attention=attention).eval()
    ids = torch.randint(0, SMALL["vocab_size"], (2, 16))
    with torch.no_grad():
        full = model(ids)
        cache = model.new_kv_cache()
        steps = [model(ids[:, :5], kv_cache=cache)]
        steps += [model(ids[:, t:t + 1], kv_cache=cache) for t in range(5, 16)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    kv_heads = changes["num_kv_heads"]
    assert cache.keys[0].shape == cache.values[1].shape == (2, kv_heads, 16, 8)


def test_bad_kv_head_counts_are_named():
    with pytest.raises(ValueError, match=r"num_heads \(8\) must be divisible by num_kv_heads \(3\)"):
        TransformerLM(**SMALL, num_kv_heads=3)
    with pytest.raises(ValueError, match=r"num_kv_heads must be a positive integer .* got 0"):
        ModelConfig(**SMALL, num_kv_heads=0)
    with pytest.raises(ValueError, match="divisible by num_kv_heads"):
        MultiHeadAttention(32, 4, num_kv_heads=3)
    with pytest.raises(ValueError, match="tie_embeddings must be true or false"):
        ModelConfig(**SMALL, tie_embeddings="yes")
    assert ModelConfig(**SMALL).num_kv_heads == 8  # None means one key/value head per query head


def test_tied_gradient_is_the_sum_of_the_embedding_and_head_gradients():
    """Oracle: an untied model holding the same matrix in both places; the tied parameter's gradient
    must be the sum of the two untied gradients, and one AdamW step moves both uses together."""
    from seqlab.training import AdamW, cross_entropy
    from seqlab.training.optimizer import weight_decay_groups

    torch.manual_seed(0)
    tied = TransformerLM(**SMALL, num_kv_heads=2, tie_embeddings=True)
    untied = TransformerLM(**SMALL, num_kv_heads=2)
    untied.load_state_dict(tied.state_dict())
    ids = torch.randint(0, SMALL["vocab_size"], (2, 13))
    for model in (tied, untied):
        cross_entropy(model(ids[:, :-1]), ids[:, 1:]).backward()
    expected = untied.token_embeddings.weight.grad + untied.lm_head.weight.grad
    torch.testing.assert_close(tied.lm_head.weight.grad, expected)
    # the shared matrix is one parameter: counted once, in one weight-decay group, updated once
    groups = weight_decay_groups(tied)
    ids_in_groups = [id(p) for group in groups for p in group["params"]]
    assert len(ids_in_groups) == len(set(ids_in_groups)) == len(list(tied.parameters()))
    assert sum(p.numel() for group in groups for p in group["params"]) == tied.num_parameters()
    assert tied.num_parameters() == untied.num_parameters() - SMALL["vocab_size"] * SMALL["d_model"]
    AdamW(groups, lr=1e-2).step()
    assert torch.equal(tied.lm_head.weight, tied.token_embeddings.weight)


def test_tied_checkpoint_round_trip_and_old_checkpoints_load_with_the_defaults(tmp_path):
    from seqlab.training import load_model_from_checkpoint, save_checkpoint

    torch.manual_seed(0)
    ids = torch.randint(0, SMALL["vocab_size"], (1, 10))
    tied = TransformerLM(**SMALL, num_kv_heads=2, tie_embeddings=True).eval()
    save_checkpoint(tied, None, 3, tmp_path / "tied.pt")
    loaded, payload = load_model_from_checkpoint(tmp_path / "tied.pt")
    assert payload["model_config"]["num_kv_heads"] == 2 and payload["model_config"]["tie_embeddings"] is True
    assert loaded.lm_head.weight is loaded.token_embeddings.weight  # still one parameter after loading
    # torch.save wrote the shared matrix once
    assert payload["model"]["lm_head.weight"].data_ptr() == payload["model"]["token_embeddings.weight"].data_ptr()
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids), tied(ids))

    # a checkpoint from before these fields existed: its model_config has neither
    old = TransformerLM(**SMALL).eval()
    save_checkpoint(old, None, 1, tmp_path / "old.pt")
    payload = torch.load(tmp_path / "old.pt", weights_only=False)
    del payload["model_config"]["num_kv_heads"], payload["model_config"]["tie_embeddings"]
    torch.save(payload, tmp_path / "old.pt")
    loaded, _ = load_model_from_checkpoint(tmp_path / "old.pt")
    assert loaded.config.num_kv_heads == SMALL["num_heads"] and loaded.config.tie_embeddings is False
    assert loaded.lm_head.weight is not loaded.token_embeddings.weight
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids), old(ids))


def test_gqa_checkpoint_refuses_an_mha_model_by_shape(tmp_path):
    from seqlab.training import load_checkpoint, save_checkpoint

    save_checkpoint(TransformerLM(**SMALL, num_kv_heads=2), None, 1, tmp_path / "gqa.pt")
    with pytest.raises(ValueError, match=r"k_proj.weight: checkpoint shape \(16, 64\) vs model shape \(64, 64\)"):
        load_checkpoint(tmp_path / "gqa.pt", TransformerLM(**SMALL))


def test_train_flags_reach_the_model():
    from seqlab.lm.settings import config_from_argv

    config = config_from_argv(["--num-heads", "4", "--num-kv-heads", "2", "--tie-embeddings"])
    model_config = config.model_config(vocab_size=50)
    assert (model_config.num_kv_heads, model_config.tie_embeddings) == (2, True)
    assert config_from_argv([]).model_config(vocab_size=50).num_kv_heads == 4
    with pytest.raises(ValueError, match=r"config num_kv_heads=3: num_heads \(4\) must be divisible"):
        config_from_argv(["--num-heads", "4", "--num-kv-heads", "3"])


def test_gpu_path_of_a_grouped_tied_model_is_flat_in_the_batch_sync_free_and_traces_whole():
    import torch._dynamo

    from benchmarks.instruments.op_count import OpCounter
    from seqlab.model import gpu_path_forced
    from seqlab.model.loss import cross_entropy

    def count(batch: int, device: str) -> OpCounter:
        model = TransformerLM(**SMALL, num_kv_heads=2, tie_embeddings=True, device=device)
        ids = torch.zeros(batch, 17, dtype=torch.long, device=device)
        with OpCounter() as counter:
            cross_entropy(model(ids[:, :-1]), ids[:, 1:]).backward()
        return counter

    assert count(2, "meta").total == count(64, "meta").total  # meta takes the GPU path (reference)
    with gpu_path_forced():
        assert count(2, "cpu").syncs == 0
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(TransformerLM(**SMALL, num_kv_heads=2, tie_embeddings=True))(
        torch.randint(0, SMALL["vocab_size"], (2, 8)))
    torch._dynamo.reset()
    assert explanation.graph_break_count == 0, explanation.break_reasons
