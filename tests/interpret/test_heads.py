"""head_scores: a hand-built previous-token head (weights set here), every score against a naive
loop over heads and query positions on attention weights recomputed from the raw projections
(tests/explorer/oracles.py), and TransformerLens's convention against its formula written here."""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.interpret import ROLES, convert_scores, head_roles, head_scores, repeated_tokens
from seqlab.model import TransformerLM
from tests.interpret.conftest import small_model


def previous_token_model(offset: float) -> TransformerLM:
    """Layer 0, head 0 attends from i to i-1: every token embeds to the same vector, so its query
    and key differ only by RoPE, and the key is pre-rotated by ``offset`` radians in the pair of
    frequency 1, so the score q . R(j - i) k peaks at j - i = -offset (offset 0: a self head)."""
    torch.manual_seed(0)
    model = TransformerLM(32, 64, 8, 2, 1).eval()
    a = 20.0  # score a^2 cos(angle): sharp enough that the nearest alias (cos 6 = 0.96) gets ~e^-16
    with torch.no_grad():
        model.token_embeddings.weight.zero_()
        model.token_embeddings.weight[:, 0] = 1.0  # ln1 -> (sqrt(8), 0, ...)
        attn = model.layers[0].attn
        attn.q_proj.weight.zero_()
        attn.k_proj.weight.zero_()
        attn.q_proj.weight[0, 0] = a
        attn.k_proj.weight[0, 0] = a * math.cos(offset)
        attn.k_proj.weight[1, 0] = a * math.sin(offset)
    return model


def test_a_hand_built_previous_token_head_scores_as_one():
    scores = head_scores(previous_token_model(1.0), seq_len=16, batches=2)
    assert set(scores) == {"previous_token", "duplicate_token", "induction", "first_token"}
    assert all(value.shape == (2, 1) for value in scores.values())
    assert float(scores["previous_token"][0, 0]) > 0.95
    assert float(scores["induction"][0, 0]) < 0.05 and float(scores["duplicate_token"][0, 0]) < 0.05
    assert head_roles(scores)[0][0] == "previous_token"
    mutant = head_scores(previous_token_model(0.0), seq_len=16, batches=2)  # attends to itself
    assert float(mutant["previous_token"][0, 0]) < 0.05 and head_roles(mutant)[0][0] == ""


def naive_scores(model, tokens):
    from tests.explorer.oracles import attention_oracle

    per_row = [[w for _, _, w in attention_oracle(model, row.tolist())] for row in tokens]  # [row][layer] (H, T, T)
    weights = [torch.stack([per_row[b][l] for b in range(len(tokens))]).float() for l in range(len(model.layers))]
    n = tokens.shape[1] // 2
    out = {name: torch.zeros(len(model.layers), model.config.num_heads) for name in
           ("previous_token", "duplicate_token", "induction", "first_token")}
    for l, w in enumerate(weights):
        for h in range(model.config.num_heads):
            a = w[:, h]
            out["previous_token"][l, h] = sum(a[:, i, i - 1].mean() for i in range(1, 2 * n)) / (2 * n - 1)
            out["first_token"][l, h] = sum(a[:, i, 0].mean() for i in range(1, 2 * n)) / (2 * n - 1)
            out["duplicate_token"][l, h] = sum(a[:, i, i - n].mean() for i in range(n, 2 * n)) / n
            out["induction"][l, h] = sum(a[:, i, i - n + 1].mean() for i in range(n, 2 * n)) / n
    return out


@pytest.mark.parametrize("extra", [{}, {"num_kv_heads": 2}])
def test_scores_match_a_loop_over_heads_and_positions(extra):
    model = small_model(7, **extra)
    tokens = repeated_tokens(256, 12, 3, seed=5)
    assert torch.equal(tokens[:, :12], tokens[:, 12:]) and tokens.shape == (3, 24)
    ours, expected = head_scores(model, tokens=tokens), naive_scores(model, tokens)
    for name in expected:
        torch.testing.assert_close(ours[name], expected[name], rtol=0, atol=1e-5)
    wrapped = torch.nn.ModuleDict({"x": model})
    wrapped.module = model  # as DDP holds it: the eval hook of a training run may pass the wrapper
    drawn = head_scores(wrapped, seq_len=12, batches=3, seed=5)
    for name in expected:
        torch.testing.assert_close(drawn[name], expected[name], rtol=0, atol=1e-5)


def test_roles_follow_the_documented_thresholds():
    scores = {"previous_token": torch.tensor([[0.9, 0.1, 0.45]]), "duplicate_token": torch.tensor([[0.0, 0.0, 0.5]]),
              "induction": torch.tensor([[0.0, 0.39, 0.0]]), "first_token": torch.tensor([[0.0, 0.59, 0.0]])}
    assert head_roles(scores) == [["previous_token", "", "duplicate_token"]]
    assert head_roles(scores, {"previous_token": 1, "duplicate_token": 1, "induction": 0.3, "first_token": 1}) == [
        ["", "induction", ""]]


def test_bad_tokens_are_named(model):
    with pytest.raises(ValueError, match="2 \\* seq_len = 66 exceeds the model's context_length 64"):
        head_scores(model, seq_len=33)
    with pytest.raises(ValueError, match="second half of each row must equal the first"):
        head_scores(model, tokens=torch.arange(8)[None])


def detection(row, role):
    """TransformerLens's detection pattern of one sequence, by its definition (a loop over cells)."""
    T = len(row)
    d = torch.zeros(T, T)
    for i in range(T):
        for j in range(T):
            if role == "previous_token":
                d[i, j] = float(j == i - 1)
            elif role == "duplicate_token":
                d[i, j] = float(j < i and row[j] == row[i])
            elif role == "induction":  # the key after an earlier copy of the current token
                d[i, j] = float(1 <= j <= i and row[j - 1] == row[i] and j - 1 < i)
            else:
                d[i, j] = float(j == 0 and i >= 1)
    return d


def transformerlens_score(pattern, detections):
    """TransformerLens's detect_head ("mul") written out: per sequence sum(A * D) / sum(A), averaged."""
    return sum(float((a * d).sum() / a.sum()) for a, d in zip(pattern, detections)) / len(detections)


def test_the_transformerlens_convention_is_its_formula_and_a_conversion_of_ours():
    model = small_model(8)
    generator = torch.Generator().manual_seed(2)
    half = torch.stack([torch.randperm(256, generator=generator)[:10] for _ in range(3)])  # no repeat in a half
    tokens = torch.cat((half, half), dim=1)
    ours = head_scores(model, tokens=tokens)
    theirs = head_scores(model, tokens=tokens, convention="transformerlens")
    from seqlab.model.taps import attention_patterns

    patterns = attention_patterns(model, tokens)  # (L, batch, H, T, T)
    for role in ROLES:
        detections = [detection(row, role) for row in tokens.tolist()]
        for l in range(2):
            for h in range(4):
                expected = transformerlens_score(patterns[l, :, h], detections)
                assert abs(float(theirs[role][l, h]) - expected) < 1e-5, (role, l, h)
    converted = convert_scores(ours, tokens.shape[1])
    for role in ROLES:
        torch.testing.assert_close(theirs[role], converted[role], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(theirs["induction"], ours["induction"] / 2)  # "exactly half" for induction heads
    with pytest.raises(ValueError, match="unknown convention"):
        head_scores(model, tokens=tokens, convention="arena")
