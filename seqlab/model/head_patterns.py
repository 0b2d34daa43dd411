"""Attention patterns of a TransformerLM, and the four head scores read off them.

Kept below training and interpretation so that both use one formula: ``seqlab.interpret``'s
``head_scores`` (its docstring defines the scores) and the head telemetry of a training run.

    tokens = repeated_tokens(vocab_size=64, seq_len=16, batches=4, seed=0)   # (4, 32): a half, twice
    scores = pattern_scores(attention_patterns(model, tokens))             # {"induction": (L, H), ...}
"""

from __future__ import annotations

import torch

ROLES = ("previous_token", "duplicate_token", "induction", "first_token")


def repeated_tokens(vocab_size: int, seq_len: int, batches: int, seed: int = 0,
                    device: torch.device | str | None = None) -> torch.Tensor:
    """(batches, 2 * seq_len): seq_len uniform random ids, then the same ids again."""
    generator = torch.Generator().manual_seed(seed)
    half = torch.randint(0, vocab_size, (batches, seq_len), generator=generator)
    return torch.cat((half, half), dim=1).to(device)


def attention_patterns(model, ids: torch.Tensor) -> torch.Tensor:
    """(L, batch, H, seq, seq): every layer's attention weights on ids (batch, seq), one forward
    pass through the model's own blocks (``need_weights``), without gradients."""
    with torch.no_grad():
        x = model.token_embeddings(ids)
        patterns = []
        for index, layer in enumerate(model.layers):  # layers run in sequence: each reads the last one's output
            x, weights = layer(x, layer_index=index, need_weights=True)
            patterns.append(weights)
    return torch.stack(patterns)


def pattern_scores(pattern: torch.Tensor) -> dict[str, torch.Tensor]:
    """The four scores, each (L, H) float32, of patterns (L, batch, H, 2n, 2n) on tokens repeated
    once (n = half the length): means of the diagonals i-1, i-n, i-n+1 over their queries (the last
    two over the second half) and of column 0 over i >= 1, and over the batch."""
    pattern = pattern.float()
    half = pattern.shape[-1] // 2
    diagonal = lambda offset: torch.diagonal(pattern, offset=-offset, dim1=-2, dim2=-1)
    return {
        "previous_token": diagonal(1).mean((1, 3)),
        "duplicate_token": diagonal(half).mean((1, 3)),
        "induction": diagonal(half - 1)[..., 1:].mean((1, 3)),
        "first_token": pattern[..., 1:, 0].mean((1, 3)),
    }
