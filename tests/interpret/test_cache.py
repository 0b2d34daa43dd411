"""run_with_cache reads the LM's taps: against the model's own forward (logits, the blocks' outputs
and inputs by forward hooks, the attention weights recomputed from the raw projections), for every
architecture TransformerLM builds; TransformerLens's names and shapes answer for the same values."""

from __future__ import annotations

import pytest
import torch

from seqlab.interpret import run_with_cache
from tests.explorer.oracles import attention_oracle
from tests.interpret.conftest import VOCAB, small_model

ARCHITECTURES = [
    {}, {"norm_position": "post"}, {"norm": "none"}, {"positional": "nope"}, {"num_kv_heads": 2},
    {"num_kv_heads": 1, "tie_embeddings": True}, {"ffn": "silu"}, {"norm_eps": 1e-6}, {"ffn": "none"},
]


@pytest.mark.parametrize("extra", ARCHITECTURES, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "default")
def test_the_cache_is_the_models_own_forward(extra):
    model = small_model(1, **extra)
    ids = torch.randint(0, VOCAB, (2, 20), generator=torch.Generator().manual_seed(0))
    outputs, inputs, attn_outputs = [], [], []
    hooks = [layer.register_forward_hook(lambda m, a, out: outputs.append(out)) for layer in model.layers]
    hooks += [layer.register_forward_pre_hook(lambda m, a: inputs.append(a[0])) for layer in model.layers]
    hooks += [layer.attn.register_forward_hook(lambda m, a, out: attn_outputs.append(out)) for layer in model.layers]
    with torch.no_grad():
        expected = model(ids)
    for hook in hooks:
        hook.remove()
    logits, cache = run_with_cache(model, ids)
    scale = float(expected.abs().max())  # without norms the activations grow; compare relative to them
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-5 * max(1.0, scale))
    # every point read: the layers use the reference attention (its weights visible), the plain forward a
    # faster backend, so the two agree to rounding
    close = dict(rtol=1e-5, atol=1e-5 * max(1.0, scale))
    torch.testing.assert_close(cache.stack("layers.*.resid_post"), torch.stack(outputs), **close)
    torch.testing.assert_close(cache.stack("layers.*.resid_pre"), torch.stack(inputs), **close)
    torch.testing.assert_close(cache.stack("layers.*.attn_out"), torch.stack(attn_outputs), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(cache["embed"], model.token_embeddings.weight[ids], rtol=0, atol=0)
    torch.testing.assert_close(cache.stack("layers.*.attn.head_out").sum(3), cache.stack("layers.*.attn_out"),
                               rtol=1e-5, atol=1e-5)
    for row in range(2):
        for layer, (_, _, weights) in enumerate(attention_oracle(model, ids[row].tolist())):
            torch.testing.assert_close(cache[f"layers.{layer}.attn.pattern"][row].double(), weights, rtol=1e-4,
                                       atol=1e-5)
    assert cache.accumulated_resid().shape == (3, 2, 20, 32)
    final = cache["layers.1.resid_post"]
    if extra.get("norm_position") == "post" or extra.get("norm") == "none":
        assert torch.equal(cache["ln_final.scale"], torch.ones(2, 20, 1))
    else:
        torch.testing.assert_close(cache["ln_final.scale"], final.pow(2).mean(-1, keepdim=True).add(
            model.config.norm_eps).sqrt())
    torch.testing.assert_close(model.lm_head(cache["ln_final.normalized"]), logits, rtol=0, atol=0)


def test_transformerlens_names_answer_with_transformerlens_shapes(model):
    logits, cache = run_with_cache(model, torch.arange(10)[None])
    assert cache["blocks.1.attn.hook_pattern"] is cache["layers.1.attn.pattern"]
    assert cache["pattern", 1] is cache["layers.1.attn.pattern"] and cache["resid_pre", 0] is cache["embed"] \
        or torch.equal(cache["resid_pre", 0], cache["embed"])
    assert cache["blocks.0.hook_resid_post"] is cache["layers.0.resid_post"]
    # TransformerLens keeps positions before heads in q, k, v and z: (batch, pos, head, d_head)
    assert cache["blocks.0.attn.hook_z"].shape == (1, 10, 4, 8) and cache["layers.0.attn.z"].shape == (1, 4, 10, 8)
    torch.testing.assert_close(cache["blocks.0.attn.hook_rot_q"], cache["layers.0.attn.q"].transpose(1, 2))
    assert cache["blocks.0.attn.hook_result"].shape == (1, 10, 4, 32)
    assert "blocks.0.hook_mlp_out" in cache and "blocks.9.hook_mlp_out" not in cache
    with pytest.raises(KeyError, match="no tap point 'layers.7.resid_pre'"):
        cache["layers.7.resid_pre"]


def test_head_out_is_each_heads_slice_of_the_output_projection(model):
    """Oracle: head h's output = its slice of the output projection's input (a pre-hook) @ its columns."""
    seen = []
    hook = model.layers[1].attn.output_proj.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
    ids = torch.arange(10)[None]
    with torch.no_grad():
        model(ids)
    hook.remove()
    z = seen[0][0].view(10, 4, 8)  # (seq, heads, d_head)
    w = model.layers[1].attn.output_proj.weight  # (d, heads * d_head)
    expected = torch.stack([z[:, h] @ w[:, h * 8:(h + 1) * 8].T for h in range(4)], dim=1)
    torch.testing.assert_close(run_with_cache(model, ids)[1]["layers.1.attn.head_out"][0], expected, rtol=0, atol=1e-5)


def test_bad_ids_are_named(model):
    with pytest.raises(ValueError, match="token id 999 at position 2 is outside the vocabulary"):
        run_with_cache(model, [1, 2, 999])
    with pytest.raises(ValueError, match="more than the model's context_length 64"):
        run_with_cache(model, list(range(65)))
    with pytest.raises(TypeError, match="reads a seqlab TransformerLM or encoder-decoder, got Linear"):
        run_with_cache(torch.nn.Linear(2, 2), [1])
