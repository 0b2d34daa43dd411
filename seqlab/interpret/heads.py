"""What each attention head does, scored on repeated random tokens.

With ``A`` a head's attention (query i, key j) on a sequence of ``seq_len`` random tokens repeated
once (length 2 * seq_len), averaged over the batch:

    previous_token   mean of A[i, i-1] over i >= 1
    duplicate_token  mean of A[i, i-seq_len] over the second half (the earlier copy of token i)
    induction        mean of A[i, i-seq_len+1] over the second half (the token after it)
    first_token      mean of A[i, 0] over i >= 1 (the "attention sink")

A uniform head over t keys scores about 1/t on each, so a score near 1 means the head does that
one thing. A previous-token head in layer 1 and an induction head in layer 2 together copy
"A B ... A" -> "B".

TransformerLens's head detector divides by every query row instead (``convention=
"transformerlens"``; seqlab.model.head_patterns has both formulas and ``convert_scores``): on these
tokens its duplicate and induction scores are half of the above, its previous-token score
(2n - 1) / 2n of it.
"""

from __future__ import annotations

import torch

from seqlab.interpret.inputs import as_batch, check_lm, model_device
from seqlab.model import TransformerLM
from seqlab.model.head_patterns import (  # noqa: F401 (public here)
    CONVENTIONS,
    ROLES,
    convert_scores,
    pattern_scores,
    repeated_tokens,
)
from seqlab.model.taps import attention_patterns

# a head is labelled with the role of its highest score among those at or above the role's threshold
ROLE_THRESHOLDS = {"previous_token": 0.4, "duplicate_token": 0.4, "induction": 0.4, "first_token": 0.6}


def head_scores(model: TransformerLM, *, tokens: torch.Tensor | None = None, seq_len: int = 32,
                batches: int = 8, seed: int = 0, convention: str = "seqlab") -> dict[str, torch.Tensor]:
    """The four scores of the module docstring, each an (L, H) tensor (float32, on the model's device).

    tokens (batch, 2 * seq_len): ids repeated once; default repeated_tokens(vocab, seq_len,
    batches, seed). One forward pass of the batch, its patterns read through the taps
    ``layers.*.attn.pattern``; no gradients; the model's train/eval mode is left as it is (the
    model has no dropout), so a training loop's eval hook may call it. convention: "seqlab" or
    "transformerlens" (module docstring).
    """
    model = check_lm(model)
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; choose one of {CONVENTIONS}")
    if tokens is None:
        for name, value in (("seq_len", seq_len), ("batches", batches)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if 2 * seq_len > model.config.context_length:
            raise ValueError(f"2 * seq_len = {2 * seq_len} exceeds the model's context_length "
                             f"{model.config.context_length}; use seq_len <= {model.config.context_length // 2}")
        tokens = repeated_tokens(model.config.vocab_size, seq_len, batches, seed, model_device(model))
    tokens = as_batch(model, tokens, "tokens")
    if tokens.shape[1] % 2 or tokens.shape[1] < 4:
        raise ValueError(f"tokens must be (batch, 2 * seq_len) with seq_len >= 2, got shape {tuple(tokens.shape)}")
    half = tokens.shape[1] // 2
    if not torch.equal(tokens[:, :half], tokens[:, half:]):
        raise ValueError("tokens must repeat: the second half of each row must equal the first")
    return pattern_scores(attention_patterns(model, tokens), tokens, convention)  # patterns (L, batch, H, 2n, 2n)


def head_roles(scores: dict[str, torch.Tensor], thresholds: dict[str, float] | None = None) -> list[list[str]]:
    """(L, H) role labels from head_scores: the role of the highest score that reaches its threshold
    (ROLE_THRESHOLDS unless given), "" for a head that reaches none."""
    thresholds = ROLE_THRESHOLDS if thresholds is None else thresholds
    stacked = torch.stack([scores[role] for role in ROLES])  # (4, L, H)
    limits = torch.tensor([thresholds[role] for role in ROLES], dtype=stacked.dtype, device=stacked.device)
    passing = torch.where(stacked >= limits[:, None, None], stacked, torch.full_like(stacked, -1.0))
    best, which = passing.max(0)
    return [[ROLES[int(r)] if float(b) >= 0 else "" for r, b in zip(row_r, row_b)]
            for row_r, row_b in zip(which, best)]
