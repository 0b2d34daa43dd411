"""patch and knockout against a naive loop: one forward of the model per patch or knockout, the
activation swapped (or the edge cut) by forward hooks written here; their defaults (the target is
the model's top token, decided in the library) and their notes on a saturated prediction."""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.interpret import knockout, patch
from tests.interpret.conftest import small_model

CLEAN = torch.tensor([5, 17, 42, 9, 17, 88, 3, 42, 9, 100, 5, 17])
CORRUPT = CLEAN.clone()
CORRUPT[[2, 7]] = torch.tensor([61, 61])


def forward_logits(model, ids, hooks=()):
    handles = [module.register_forward_hook(hook) if kind == "post" else module.register_forward_pre_hook(hook)
               for module, kind, hook in hooks]
    try:
        with torch.no_grad():
            return model(ids[None])[0, -1]
    finally:
        for handle in handles:
            handle.remove()


def captured(model, ids, module, pre: bool):
    seen = []
    kind = "pre" if pre else "post"
    forward_logits(model, ids, [(module, kind, (lambda m, a: seen.append(a[0])) if pre
                                 else (lambda m, a, out: seen.append(out)))])
    return seen[0]


def naive_patch(model, where, target, baseline):
    metric = lambda logits: float(logits[target] - logits[baseline])
    m_clean, m_corrupt = metric(forward_logits(model, CLEAN)), metric(forward_logits(model, CORRUPT))
    seq, heads, d_head = len(CLEAN), model.config.num_heads, model.config.d_head
    rows = []
    for layer in model.layers:
        if where == "resid_pre":
            module, pre = layer, True
        elif where == "mlp_out":
            module, pre = layer.ffn, False
        else:
            module, pre = layer.attn.output_proj, True  # its input holds the heads side by side
        clean_value = captured(model, CLEAN, module, pre)
        cells = []
        for h in range(heads if where == "head_out" else 1):
            for p in range(seq):
                def swap(value, p=p, h=h):
                    value = value.clone()
                    if where == "head_out":
                        value[0, p, h * d_head:(h + 1) * d_head] = clean_value[0, p, h * d_head:(h + 1) * d_head]
                    else:
                        value[0, p] = clean_value[0, p]
                    return value
                hook = (lambda m, a: (swap(a[0]),) + a[1:]) if pre else (lambda m, a, out: swap(out))
                value = metric(forward_logits(model, CORRUPT, [(module, "pre" if pre else "post", hook)]))
                cells.append((value - m_corrupt) / (m_clean - m_corrupt))
        rows.append(torch.tensor(cells).view(heads, seq) if where == "head_out" else torch.tensor(cells))
    return torch.stack(rows)


def most_moved(model):
    """(target, baseline): the tokens whose logits the corruption moves most, up and down, so the
    clean-minus-corrupt normaliser is far from 0."""
    moved = forward_logits(model, CLEAN) - forward_logits(model, CORRUPT)
    return int(moved.argmax()), int(moved.argmin())


@pytest.mark.parametrize("where", ["resid_pre", "mlp_out", "head_out"])
@pytest.mark.parametrize("extra", [{}, {"num_kv_heads": 2, "norm_position": "post"}], ids=["pre", "post-gqa"])
def test_patching_matches_one_forward_per_patch(where, extra):
    model = small_model(2, **extra)
    target, baseline = most_moved(model)
    result = patch(model, CLEAN, CORRUPT, target=target, baseline=baseline, where=where)
    ours = result.recovery
    assert (result.target, result.baseline) == (target, baseline)
    expected = naive_patch(model, where, target, baseline)
    assert ours.shape == expected.shape
    torch.testing.assert_close(ours, expected, rtol=1e-4, atol=1e-4)
    if where == "resid_pre":  # patching everything at the first layer's corrupted positions is the clean run
        assert float(ours[0, 2]) != 0 and abs(float(ours[:, 0].abs().max())) < 1e-5  # position 0 was not corrupted


def test_a_custom_metric_replaces_the_logit_difference(model):
    metric = lambda logits: logits.float().log_softmax(-1)[:, 42]
    ours = patch(model, CLEAN, CORRUPT, metric=metric).recovery
    logp = lambda ids: float(forward_logits(model, ids).log_softmax(-1)[42])

    def hook(m, a):
        value = a[0].clone()
        value[0, 7] = clean_in[0, 7]
        return (value,)
    clean_in = captured(model, CLEAN, model.layers[1], True)
    logp_with = float(forward_logits(model, CORRUPT, [(model.layers[1], "pre", hook)]).log_softmax(-1)[42])
    expected = (logp_with - logp(CORRUPT)) / (logp(CLEAN) - logp(CORRUPT))
    assert math.isclose(float(ours[1, 7]), expected, rel_tol=1e-4, abs_tol=1e-5)


def naive_knockout(model, ids, position, target):
    """Each (layer, source): that layer's attention recomputed with torch's SDPA and the edge masked."""
    import torch.nn.functional as F

    ids = ids[:position + 1]
    logp = lambda hooks=(): forward_logits_at(model, ids, hooks).log_softmax(-1)[target]
    base = float(logp())
    out = torch.zeros(len(model.layers), len(ids) + 0)
    cfg = model.config
    for l, layer in enumerate(model.layers):
        attn = layer.attn
        for s in range(position + 1):
            def replace(m, args, output, s=s):
                x = args[0]
                n = x.shape[1]
                q = attn.q_proj(x).view(1, n, cfg.num_heads, cfg.d_head).transpose(1, 2)
                k = attn.k_proj(x).view(1, n, cfg.num_kv_heads, cfg.d_head).transpose(1, 2)
                v = attn.v_proj(x).view(1, n, cfg.num_kv_heads, cfg.d_head).transpose(1, 2)
                if attn.rope is not None:
                    q, k = attn.rope(q), attn.rope(k)
                allowed = torch.ones(n, n, dtype=torch.bool).tril()
                allowed[position, s] = False
                z = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed,
                                                   enable_gqa=cfg.num_kv_heads != cfg.num_heads)
                return attn.output_proj(z.transpose(1, 2).reshape(1, n, cfg.d_model))
            out[l, s] = base - float(logp([(attn, "post", replace)]))
    return out


def forward_logits_at(model, ids, hooks):
    handles = [module.register_forward_hook(hook) for module, _, hook in hooks]
    try:
        with torch.no_grad():
            return model(ids[None])[0, -1].float()
    finally:
        for handle in handles:
            handle.remove()


@pytest.mark.parametrize("extra", [{}, {"num_kv_heads": 2}, {"positional": "nope", "tie_embeddings": True}])
def test_knockout_matches_one_forward_per_cut_edge(extra):
    model = small_model(4, **extra)
    with torch.no_grad():
        target = int(model(CLEAN[None])[0, 8].argmax())
    result = knockout(model, CLEAN, position=8)
    ours = result.drops
    assert ours.shape == (2, len(CLEAN)) and result.target == target and result.position == 8
    expected = naive_knockout(model, CLEAN, 8, target)
    torch.testing.assert_close(ours[:, :9], expected[:, :9], rtol=1e-4, atol=1e-4)
    assert torch.equal(ours[:, 9:], torch.zeros(2, 3)) and float(ours.abs().max()) > 1e-3
    other = knockout(model, CLEAN, position=-4, target=7).drops  # -4 is position 8 of 12
    torch.testing.assert_close(other[:, :9], naive_knockout(model, CLEAN, 8, 7)[:, :9], rtol=1e-4, atol=1e-4)


def test_bad_input_is_named(model):
    with pytest.raises(ValueError, match="the clean prompt has 12 tokens and the corrupted one 11"):
        patch(model, CLEAN, CORRUPT[:11], target=42, baseline=61)
    with pytest.raises(ValueError, match="target: token id 256 is outside the vocabulary"):
        patch(model, CLEAN, CORRUPT, target=256, baseline=61)
    with pytest.raises(ValueError, match="where must be one of"):
        patch(model, CLEAN, CORRUPT, target=42, baseline=61, where="attn")
    with pytest.raises(ValueError, match="nothing to recover"):
        patch(model, CLEAN, CLEAN, target=42, baseline=61)
    with pytest.raises(ValueError, match="position 12 is out of range for a prompt of 12 tokens"):
        knockout(model, CLEAN, position=12)
    with pytest.raises(ValueError, match="target: token id -1 is outside"):
        knockout(model, CLEAN, target=-1)


def test_the_default_target_and_baseline_are_decided_by_the_library(model):
    with torch.no_grad():
        clean_logits, corrupt_logits = model(CLEAN[None])[0, -1], model(CORRUPT[None])[0, -1]
    result = patch(model, CLEAN, CORRUPT)
    assert result.target == int(clean_logits.argmax())
    expected_baseline = int(corrupt_logits.argmax())
    if expected_baseline == result.target:  # both prompts predict the same token: the clean runner-up
        expected_baseline = int(clean_logits.topk(2).indices[1])
    assert result.baseline == expected_baseline
    assert abs(result.clean_metric - float(clean_logits[result.target] - clean_logits[result.baseline])) < 1e-4


def test_a_saturated_prediction_is_said_so():
    """Known answer: a model whose output layer puts logit +40 on one token predicts it with p ~ 1;
    knockout and dependencies then say "saturated" and suggest another target."""
    from seqlab.interpret import token_dependencies

    model = small_model(9)
    ids = CLEAN[:6]
    with torch.no_grad():
        hidden = model(ids[None], return_hidden=True)[0, -1]
        model.lm_head.weight.zero_()
        model.lm_head.weight[42] = 40.0 * hidden / hidden.pow(2).sum()  # logit 40 for token 42, 0 for the rest
    for result in (knockout(model, ids), token_dependencies(model, ids)):
        assert result.target == 42 and result.p > 0.999
        assert [note.code for note in result.notes][:1] == ["saturated"], result.notes
        assert "--target" in result.notes[0].suggestion
    calm = knockout(small_model(4), CLEAN, position=8)
    assert calm.p < 0.999 and "saturated" not in [note.code for note in calm.notes]
