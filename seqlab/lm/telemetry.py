"""Head telemetry of a training run (``seqlab train --track-heads``): the four head scores of
every attention head, logged at each evaluation.

The scores are those of ``seqlab.interpret.head_scores`` (previous-token, duplicate-token,
induction, first-token; defined there), on a fixed batch of random tokens repeated once, drawn
from ``seed`` the same way. In log.jsonl each evaluation record gets one number per head and
score, under the key ``heads/{score}/L{layer}H{head}`` (0-based), e.g.::

    {"step": 200, "val_loss": 2.31, "heads/induction/L1H3": 0.62, "heads/previous_token/L0H1": 0.88, ...}

Flat numbers, so every tracker (W&B, TensorBoard) and the run log take them as they take the
loss; :func:`head_series` reads them back as one (L, H) grid per record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

ROLES = ("previous_token", "duplicate_token", "induction", "first_token")  # seqlab.model.head_patterns.ROLES

PREFIX = "heads/"
KEY = re.compile(r"^heads/(?P<role>[a-z_]+)/L(?P<layer>\d+)H(?P<head>\d+)$")
SEQ_LEN, BATCHES, SEED = 32, 4, 0  # the telemetry batch: 4 rows of 32 random tokens repeated once


def head_key(role: str, layer: int, head: int) -> str:
    return f"{PREFIX}{role}/L{layer}H{head}"


def telemetry_tokens(vocab_size: int, context_length: int, *, seq_len: int = SEQ_LEN, batches: int = BATCHES,
                     seed: int = SEED, device: torch.device | str | None = None) -> torch.Tensor:
    """The fixed batch the hook scores on: seq_len (at most half the context) random ids, twice."""
    from seqlab.model.head_patterns import repeated_tokens

    if context_length < 4:
        raise ValueError(f"--track-heads scores heads on random tokens repeated once, at least 2 + 2 tokens; the "
                         f"context_length is {context_length}: use --context-length 4 or more")
    return repeated_tokens(vocab_size, max(2, min(seq_len, context_length // 2)), batches, seed, device)


def head_metrics(model: torch.nn.Module, tokens: torch.Tensor) -> dict[str, float]:
    """{``heads/{score}/L{l}H{h}``: value} of ``model`` on ``tokens`` (batch, 2n), one forward pass."""
    import torch

    from seqlab.model.head_patterns import pattern_scores
    from seqlab.model.taps import attention_patterns

    scores = pattern_scores(attention_patterns(model, tokens))
    grid = torch.stack([scores[role] for role in ROLES]).cpu().tolist()  # (4, L, H): one device read
    return {head_key(role, layer, head): value for role, rows in zip(ROLES, grid)
            for layer, row in enumerate(rows) for head, value in enumerate(row)}


def head_score_hook(vocab_size: int, context_length: int, *, seq_len: int = SEQ_LEN, batches: int = BATCHES,
                    seed: int = SEED) -> Callable[[torch.nn.Module, Any], dict[str, float]]:
    """An engine eval hook (``hook(model, where)``) logging :func:`head_metrics` on the fixed batch."""
    cached: dict[str, torch.Tensor] = {}
    telemetry_tokens(vocab_size, context_length, seq_len=seq_len, batches=1, seed=seed)  # refuse a tiny context now

    def hook(model: torch.nn.Module, where: Any) -> dict[str, float]:
        device = str(where.device)
        if device not in cached:
            cached[device] = telemetry_tokens(vocab_size, context_length, seq_len=seq_len, batches=batches,
                                              seed=seed, device=where.device)
        return head_metrics(model, cached[device])

    return hook


def head_series(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The head scores of a run's evaluation records, for charts: {"steps": [...], "layers": L,
    "heads": H, "scores": {score: [(L, H) grid per step]}, "best": {score: [max over heads per step]}};
    None when no record has them."""
    found = [record for record in records
             if isinstance(record.get("step"), int) and any(str(key).startswith(PREFIX) for key in record)]
    if not found:
        return None
    layers = heads = 0
    for record in found:
        for key in record:
            match = KEY.match(str(key))
            if match:
                layers, heads = max(layers, int(match["layer"]) + 1), max(heads, int(match["head"]) + 1)
    roles = [role for role in ROLES if any(head_key(role, 0, 0) in record for record in found)]
    scores = {role: [[[_number(record.get(head_key(role, layer, head))) for head in range(heads)]
                      for layer in range(layers)] for record in found] for role in roles}
    best = {role: [max((v for row in grid for v in row if v is not None), default=None) for grid in grids]
            for role, grids in scores.items()}
    return {"steps": [record["step"] for record in found], "layers": layers, "heads": heads, "scores": scores,
            "best": best}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
