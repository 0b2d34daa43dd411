"""run_with_cache against the model's own forward: its logits, its layers' outputs (forward hooks)
and its attention weights (need_weights), for every architecture TransformerLM builds."""

from __future__ import annotations

import pytest
import torch

from seqlab.interpret import run_with_cache
from tests.interpret.conftest import VOCAB, small_model

ARCHITECTURES = [
    {}, {"norm_position": "post"}, {"norm": "none"}, {"positional": "nope"}, {"num_kv_heads": 2},
    {"num_kv_heads": 1, "tie_embeddings": True}, {"ffn": "silu"}, {"norm_eps": 1e-6},
]


@pytest.mark.parametrize("extra", ARCHITECTURES, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "default")
def test_the_cache_is_the_models_own_forward(extra):
    model = small_model(1, **extra)
    ids = torch.randint(0, VOCAB, (2, 20), generator=torch.Generator().manual_seed(0))
    outputs, attn_inputs = [], []
    hooks = [layer.register_forward_hook(lambda m, a, out: outputs.append(out)) for layer in model.layers]
    hooks += [layer.attn.register_forward_pre_hook(lambda m, a: attn_inputs.append(a[0])) for layer in model.layers]
    with torch.no_grad():
        expected = model(ids)
    for hook in hooks:
        hook.remove()
    cache = run_with_cache(model, ids)
    scale = float(expected.abs().max())  # without norms the activations grow; compare relative to them
    torch.testing.assert_close(cache.logits, expected, rtol=0, atol=1e-5 * max(1.0, scale))
    torch.testing.assert_close(cache.resid_post, torch.stack(outputs), rtol=1e-5, atol=1e-5 * max(1.0, scale))
    torch.testing.assert_close(cache.resid_pre[1:], cache.resid_post[:-1], rtol=0, atol=0)
    torch.testing.assert_close(cache.embed, model.token_embeddings.weight[ids], rtol=0, atol=0)
    torch.testing.assert_close(cache.head_out.sum(3), cache.attn_out, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        for index, (layer, x) in enumerate(zip(model.layers, attn_inputs)):
            _, weights = layer.attn(x, need_weights=True)
            torch.testing.assert_close(cache.pattern[index], weights, rtol=0, atol=1e-5)
    acc = cache.accumulated_resid()
    assert acc.shape == (3, 2, 20, 32)
    if extra.get("norm_position") == "post" or extra.get("norm") == "none":
        assert torch.equal(cache.final_norm_scale, torch.ones(2, 20))
    else:
        final = cache.resid_post[-1]
        torch.testing.assert_close(cache.final_norm_scale, 1 / final.pow(2).mean(-1).add(model.config.norm_eps).sqrt())


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
    torch.testing.assert_close(run_with_cache(model, ids).head_out[1, 0], expected, rtol=0, atol=1e-5)


def test_bad_ids_are_named(model):
    with pytest.raises(ValueError, match="token id 999 at position 2 is outside the vocabulary"):
        run_with_cache(model, [1, 2, 999])
    with pytest.raises(ValueError, match="more than the model's context_length 64"):
        run_with_cache(model, list(range(65)))
    with pytest.raises(TypeError, match="TransformerLM"):
        run_with_cache(torch.nn.Linear(2, 2), [1])
