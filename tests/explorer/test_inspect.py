"""seqlab.lm.inspection against oracles written here: attention weights from the raw projection
matrices, a complex-number RoPE and torch.softmax; the model's real attention output = weights @ V;
the next-token filters against a sort-based top-k / top-p."""

from __future__ import annotations

import pytest
import torch

from seqlab.lm.inspection import (
    check_ids,
    next_token_candidates,
    trace_forward,
)
from seqlab.model import TransformerLM
from seqlab.model.taps import attention_patterns
from tests.explorer.oracles import (
    attention_oracle,
    kv_head_of_query_heads,
    sorted_filter,
)

pytestmark = pytest.mark.usefixtures("one_thread")

VARIANTS = [
    {},  # pre-norm, RoPE, SwiGLU
    {"norm_position": "post"},
    {"positional": "nope"},
    {"norm": "none", "ffn": "silu"},
    {"num_kv_heads": 2},  # grouped-query attention: query heads 0-1 share key/value head 0, 2-3 head 1
    {"num_kv_heads": 1, "tie_embeddings": True},
]


def _model(**changes) -> TransformerLM:
    torch.manual_seed(0)
    model = TransformerLM(vocab_size=50, context_length=12, d_model=16, num_layers=2, num_heads=4,
                          rope_theta=100.0, **changes)
    with torch.no_grad():  # larger weights than the init, so the attention rows are far from uniform
        for p in model.parameters():
            p.mul_(3.0)
    return model.eval()


@pytest.mark.parametrize("changes", VARIANTS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_attention_weights_match_an_oracle_and_the_models_output(changes):
    model = _model(**changes)
    ids = [3, 41, 7, 7, 19, 0, 33, 12, 5]
    T, H = len(ids), model.config.num_heads
    trace = trace_forward(model, ids)
    with torch.no_grad():
        torch.testing.assert_close(trace.logits, model(torch.tensor([ids]))[0], atol=1e-5, rtol=1e-5)
    oracle = attention_oracle(model, ids)
    assert len(trace.attention) == len(oracle) == 2
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    for layer, weights, (h, out, expected) in zip(model.layers, trace.attention, oracle):
        assert weights.shape == (H, T, T)
        torch.testing.assert_close(weights.double(), expected, atol=1e-5, rtol=1e-4)
        assert torch.all(weights[:, future] == 0)  # causal: the upper triangle is empty
        assert expected.max() > 0.6  # the check is not on near-uniform rows
        # the model's actual attention output is these weights applied to V, then output_proj
        v = (h @ layer.attn.v_proj.weight.double().T).view(T, -1, model.config.d_head).transpose(0, 1)
        v = v[kv_head_of_query_heads(H, v.shape[0])]
        concat = (weights.double() @ v).transpose(0, 1).reshape(T, -1)
        torch.testing.assert_close(concat @ layer.attn.output_proj.weight.double().T, out, atol=1e-5, rtol=1e-4)
    assert attention_patterns(model, torch.as_tensor(ids)[None]).shape == (2, 1, H, T, T)


def test_trace_weights_come_from_the_models_own_attention_module(monkeypatch):
    """trace_forward reads each layer's weights through the model's own taps: it re-derives
    nothing, so a change to the module's attention formula shows up in the trace (a mutant that
    doubles the scores changes the trace's weights)."""
    import seqlab.model.attention as attention

    model, ids = _model(), [3, 1, 4, 1, 5]
    before = trace_forward(model, ids).attention
    original = attention.attention_scores
    monkeypatch.setattr(attention, "attention_scores", lambda *a, **k: 2 * original(*a, **k))
    after = trace_forward(model, ids).attention
    assert all(not torch.allclose(a, b) for a, b in zip(before, after))


def test_shapes_are_those_of_the_forward_pass():
    model = _model()
    shapes = dict(trace_forward(model, [1, 2, 3, 4, 5]).shapes)
    assert shapes == {
        "ids": (1, 5), "embedding": (1, 5, 16), "q": (1, 4, 5, 4), "k": (1, 4, 5, 4), "v": (1, 4, 5, 4),
        "scores": (1, 4, 5, 5), "weights": (1, 4, 5, 5), "head_output": (1, 4, 5, 4), "concat": (1, 5, 16),
        "attention_output": (1, 5, 16), "block_output": (1, 5, 16), "logits": (1, 5, 50),
    }
    grouped = dict(trace_forward(_model(num_kv_heads=2), [1, 2, 3, 4, 5]).shapes)
    assert {name: grouped[name] for name in ("q", "k", "v", "weights", "head_output")} == {
        "q": (1, 4, 5, 4), "k": (1, 2, 5, 4), "v": (1, 2, 5, 4), "weights": (1, 4, 5, 5), "head_output": (1, 4, 5, 4)}


@pytest.mark.parametrize("ids, words", [([], "no token ids"), (list(range(13)), "13 ids exceed"),
                                         ([1, 50], "token id 50 at position 1 is outside the vocabulary")])
def test_bad_ids_are_named(ids, words):
    with pytest.raises(ValueError, match=words):
        check_ids(_model(), ids)


@pytest.mark.parametrize("temperature, top_k, top_p", [(1.0, None, 1.0), (0.7, 5, 1.0), (1.3, None, 0.6),
                                                       (0.5, 12, 0.8), (2.0, 1, 0.3), (1.0, 30, 0.95)])
def test_next_token_candidates_against_a_sort_based_filter(temperature, top_k, top_p):
    torch.manual_seed(1)
    logits = torch.randn(40) * 2
    c = next_token_candidates(logits, temperature, top_p=top_p, top_k=top_k, count=20)
    reference = torch.softmax(logits.double() / temperature, dim=-1)
    expected_ids = torch.sort(reference, descending=True).indices[:20]
    assert c.ids.tolist() == expected_ids.tolist()
    torch.testing.assert_close(c.probs.double(), reference[expected_ids], atol=1e-6, rtol=1e-5)
    filtered = sorted_filter(logits, temperature, top_k, top_p)
    torch.testing.assert_close(c.filtered.double(), filtered[expected_ids], atol=1e-6, rtol=1e-5)
    assert c.kept_total == int((filtered > 0).sum())
    assert 1 <= c.kept_total <= (top_k or 40)


def test_next_token_candidates_reject_bad_filters():
    with pytest.raises(ValueError, match="temperature must be > 0"):
        next_token_candidates(torch.zeros(5), temperature=0.0)
    with pytest.raises(ValueError, match="top_p must be in"):
        next_token_candidates(torch.zeros(5), top_p=1.5)
    with pytest.raises(ValueError, match="top_k must be a positive"):
        next_token_candidates(torch.zeros(5), top_k=-1)


def test_next_token_candidates_take_the_filters_by_keyword_only():
    """The other sampling functions take (temperature, top_p, top_k); this one once took
    (temperature, top_k, top_p), so a positional call could swap them silently."""
    with pytest.raises(TypeError, match="positional"):
        next_token_candidates(torch.zeros(5), 1.0, 2, 0.5)
    logits = torch.tensor([2.0, 1.0, 0.0])
    c = next_token_candidates(logits, top_k=2, count=3)
    expected = torch.softmax(logits[:2].double(), dim=-1)  # the two kept, renormalised
    torch.testing.assert_close(c.filtered.double(), torch.cat([expected, torch.zeros(1, dtype=torch.double)]),
                               atol=1e-6, rtol=1e-5)
