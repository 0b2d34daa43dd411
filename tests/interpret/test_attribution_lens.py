"""Direct logit attribution (the sum rule, and each head against its own removal from the final
residual), the logit lens against Hugging Face's LlamaForCausalLM of the exported run, and
token_dependencies against autograd through the model's own forward."""

from __future__ import annotations

import pytest
import torch

from seqlab.interpret import (
    direct_logit_attribution,
    logit_lens,
    run_with_cache,
    token_dependencies,
)
from tests.interpret.conftest import small_model

IDS = torch.tensor([5, 17, 42, 9, 17, 88, 3, 42, 9, 100])


@pytest.mark.parametrize("extra", [{}, {"num_kv_heads": 2, "tie_embeddings": True}, {"norm": "none"}])
def test_attribution_parts_sum_to_the_logit(extra):
    model = small_model(5, **extra)
    with torch.no_grad():
        logits = model(IDS[None])[0]
    single = direct_logit_attribution(model, IDS, position=6, target=42)
    assert single.heads.shape == (2, 4) and single.mlps.shape == (2,)
    parts = single.embed + float(single.heads.sum()) + float(single.mlps.sum())
    assert abs(parts - float(logits[6, 42])) < 1e-4 and abs(single.total - float(logits[6, 42])) < 1e-5
    diff = direct_logit_attribution(model, IDS, position=-1, target=42, baseline=9)
    parts = diff.embed + float(diff.heads.sum()) + float(diff.mlps.sum())
    assert abs(parts - float(logits[-1, 42] - logits[-1, 9])) < 1e-4
    top = direct_logit_attribution(model, IDS, position=3)  # the default target: the model's top token there
    assert top.target == int(logits[3].argmax()) and abs(top.total - float(logits[3].max())) < 1e-5


def test_one_heads_attribution_is_its_output_read_with_the_frozen_scale(model):
    """Oracle: the final residual's logit minus the logit with head (1, 2)'s output removed, the
    final RMSNorm's scale held at the full residual's value (computed here by hand)."""
    _, cache = run_with_cache(model, IDS)
    with torch.no_grad():
        final = cache["layers.1.resid_post"][0, 4]
        scale = final.pow(2).mean().add(model.config.norm_eps).rsqrt()
        readout = lambda r: float((r * scale * model.ln_final.weight) @ model.lm_head.weight[42])
        expected = readout(final) - readout(final - cache["layers.1.attn.head_out"][0, 4, 2])
    ours = direct_logit_attribution(model, IDS, position=4, target=42)
    assert abs(float(ours.heads[1, 2]) - expected) < 1e-5


def test_post_norm_and_bad_input_are_refused(model):
    with pytest.raises(ValueError, match="pre-norm"):
        direct_logit_attribution(small_model(0, norm_position="post"), IDS, target=1)
    with pytest.raises(ValueError, match="position -11 is out of range for a prompt of 10 tokens"):
        direct_logit_attribution(model, IDS, position=-11, target=1)
    with pytest.raises(ValueError, match="baseline: token id 300 is outside the vocabulary"):
        direct_logit_attribution(model, IDS, target=1, baseline=300)
    with pytest.raises(ValueError, match="target: token id 256"):
        logit_lens(model, IDS, target=256)


def test_the_lens_is_hugging_faces_hidden_states_through_its_norm_and_head(byte_run, tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    from transformers import LlamaForCausalLM

    from seqlab.cli import main
    from seqlab.lm import load_model

    assert main(["export", "--to", "hf", str(byte_run), str(tmp_path / "hf")]) == 0
    hf = LlamaForCausalLM.from_pretrained(tmp_path / "hf", dtype=torch.float32).eval()
    model = load_model(run=byte_run).model
    ids = list(b"the cat sat on the mat; the cat")
    with torch.no_grad():
        hidden = hf(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
        # every hidden state but the last goes through HF's own final norm; the last already has
        expected = torch.stack([hf.lm_head(hf.model.norm(h))[0] for h in hidden[:-1]] + [hf.lm_head(hidden[-1])[0]])
    lens = logit_lens(model, ids, top_k=3)
    L, seq = len(model.layers), len(ids)
    assert lens.logits.shape == (L + 1, seq, 256) and lens.top_ids.shape == (L + 1, seq, 3)
    torch.testing.assert_close(lens.logits, expected, rtol=0, atol=1e-4)
    probs = expected.softmax(-1)
    top = probs.topk(3, dim=-1)
    torch.testing.assert_close(lens.top_probs, top.values, rtol=0, atol=1e-5)
    nxt = torch.tensor(ids[1:])
    p_next = probs[:, :-1].gather(-1, nxt.expand(L + 1, -1)[..., None])[..., 0]
    torch.testing.assert_close(lens.target_prob[:, :-1], p_next, rtol=0, atol=1e-5)
    assert torch.isnan(lens.target_prob[:, -1]).all()
    rank = (probs[:, :-1] > p_next[..., None]).sum(-1) + 1
    assert torch.equal(lens.target_rank[:, :-1], rank)
    fixed = logit_lens(model, ids, target=ord("t"))
    torch.testing.assert_close(fixed.target_prob, probs[..., ord("t")], rtol=0, atol=1e-5)


@pytest.mark.parametrize("extra", [{}, {"norm_position": "post", "num_kv_heads": 1}])
def test_dependencies_are_gradient_times_input_of_the_models_own_forward(extra):
    model = small_model(6, **extra)
    kept = []

    def keep(m, a, out):
        out.retain_grad()
        kept.append(out)

    hooks = [model.token_embeddings.register_forward_hook(lambda m, a, out: out.requires_grad_(True))]
    hooks += [model.token_embeddings.register_forward_hook(keep)]
    hooks += [layer.register_forward_hook(keep) for layer in model.layers]
    logp = model(IDS[None])[0, 6].log_softmax(-1)
    for hook in hooks:
        hook.remove()
    target = int(logp.argmax())
    logp[target].backward()
    expected = torch.stack([(r.grad * r).sum(-1)[0] for r in kept])
    result = token_dependencies(model, IDS, position=6)
    ours = result.values
    assert ours.shape == (3, 10) and result.target == target
    torch.testing.assert_close(ours, expected.detach(), rtol=1e-4, atol=1e-6)
    assert torch.equal(ours[:, 7:], torch.zeros(3, 3)) and float(ours[:-1, :7].abs().min()) > 0
    # the last residual reaches the prediction only through its own position
    assert torch.equal(ours[-1, :6], torch.zeros(6)) and float(ours[-1, 6]) != 0
    torch.testing.assert_close(token_dependencies(model, IDS, position=6, target=target).values, ours)
