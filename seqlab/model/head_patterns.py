"""Attention patterns of a TransformerLM, and the four head scores read off them.

Kept below training and interpretation so that both use one formula: ``seqlab.interpret``'s
``head_scores`` (its docstring defines the scores) and the head telemetry of a training run.

    tokens = repeated_tokens(vocab_size=64, seq_len=16, batches=4, seed=0)   # (4, 32): a half, twice
    scores = pattern_scores(attention_patterns(model, tokens))             # seqlab.model.taps.attention_patterns

Two conventions: "seqlab" (the mean of the weight on the key a role names, over the queries that
have one) and "transformerlens" (its head detector: sum(A * D) / sum(A) per sequence, D the
detection pattern built from the tokens, averaged over the batch; :func:`pattern_scores` says
more). Its denominator counts every query row, so on tokens whose first half has no repeat
transformerlens = seqlab * (queries the seqlab mean is over) / (all 2n queries): half for
duplicate and induction heads (``convert_scores``).
"""

from __future__ import annotations

import torch

ROLES = ("previous_token", "duplicate_token", "induction", "first_token")
CONVENTIONS = ("seqlab", "transformerlens")


def repeated_tokens(vocab_size: int, seq_len: int, batches: int, seed: int = 0,
                    device: torch.device | str | None = None) -> torch.Tensor:
    """(batches, 2 * seq_len): seq_len uniform random ids, then the same ids again."""
    generator = torch.Generator().manual_seed(seed)
    half = torch.randint(0, vocab_size, (batches, seq_len), generator=generator)
    return torch.cat((half, half), dim=1).to(device)


def pattern_scores(pattern: torch.Tensor, tokens: torch.Tensor | None = None,
                   convention: str = "seqlab") -> dict[str, torch.Tensor]:
    """The four scores, each (L, H) float32, of patterns (L, batch, H, 2n, 2n) on tokens repeated
    once (n = half the length).

    "seqlab": previous token over i >= 1, duplicate and induction over the second half (n queries of
    2n), first token over i >= 1. "transformerlens" (needs the tokens (batch, 2n)): TransformerLens's
    ``detect_head`` with error measure "mul", D[i, j] = 1 where token j equals token i, j < i
    (duplicate), the same one key right (induction), j = i - 1 (previous token), and for first
    token (which TransformerLens does not name) j = 0, i >= 1."""
    pattern = pattern.float()
    if convention == "transformerlens":
        if tokens is None:
            raise ValueError("the transformerlens convention builds its detection patterns from the tokens: "
                             "pass tokens=")
        detections = detection_patterns(tokens.to(pattern.device))  # role -> (batch, 2n, 2n)
        total = pattern.sum((-2, -1))  # (L, batch, H): the number of query rows with a visible key
        return {role: ((pattern * detections[role][None, :, None]).sum((-2, -1)) / total).mean(1)
                for role in ROLES}
    if convention != "seqlab":
        raise ValueError(f"unknown convention {convention!r}; choose one of {CONVENTIONS}")
    half = pattern.shape[-1] // 2
    diagonal = lambda offset: torch.diagonal(pattern, offset=-offset, dim1=-2, dim2=-1)
    return {
        "previous_token": diagonal(1).mean((1, 3)),
        "duplicate_token": diagonal(half).mean((1, 3)),
        "induction": diagonal(half - 1)[..., 1:].mean((1, 3)),
        "first_token": pattern[..., 1:, 0].mean((1, 3)),
    }


def detection_patterns(tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """TransformerLens's detection patterns of tokens (batch, seq), each (batch, seq, seq) float."""
    seq = tokens.shape[-1]
    earlier = torch.ones(seq, seq, dtype=torch.bool, device=tokens.device).tril(-1)  # j < i
    duplicate = (tokens[:, :, None] == tokens[:, None, :]) & earlier
    induction = torch.zeros_like(duplicate)
    induction[:, :, 1:] = duplicate[:, :, :-1]  # key j <= i where token j - 1 (before i) equals token i
    rows = torch.arange(seq, device=tokens.device)
    previous = (rows[None, :, None] - 1 == rows[None, None, :]).expand_as(duplicate)
    first = ((rows[None, None, :] == 0) & (rows[None, :, None] >= 1)).expand_as(duplicate)
    return {"previous_token": previous.float(), "duplicate_token": duplicate.float(),
            "induction": induction.float(), "first_token": first.float()}


def convert_scores(scores: dict[str, torch.Tensor], seq: int) -> dict[str, torch.Tensor]:
    """seqlab-convention scores on sequences of ``seq`` = 2n tokens (a first half without repeats)
    -> the transformerlens convention: each times (its number of queries) / seq."""
    half = seq // 2
    queries = {"previous_token": seq - 1, "duplicate_token": half, "induction": half, "first_token": seq - 1}
    return {role: value * (queries[role] / seq) for role, value in scores.items()}
