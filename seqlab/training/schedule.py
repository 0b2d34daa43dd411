"""Learning-rate schedule: linear warm-up then cosine decay."""

from __future__ import annotations

import math


def lr_cosine_schedule(it: int, max_learning_rate: float, min_learning_rate: float,
                       warmup_iters: int, cosine_cycle_iters: int) -> float:
    """Learning rate at iteration `it` (0-based).

    it < warmup_iters:                      max * it / warmup_iters
    warmup_iters <= it <= cosine_cycle_iters: min + (max - min) * (1 + cos(pi * progress)) / 2
    it > cosine_cycle_iters:                min
    where progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters).
    """
    if it < 0:
        raise ValueError(f"iteration must be >= 0, got {it}")
    if warmup_iters < 0 or cosine_cycle_iters < warmup_iters:
        raise ValueError(
            f"need 0 <= warmup_iters <= cosine_cycle_iters, got {warmup_iters} and {cosine_cycle_iters}"
        )
    if it < warmup_iters:
        return max_learning_rate * it / warmup_iters
    if it > cosine_cycle_iters:
        return min_learning_rate
    if cosine_cycle_iters == warmup_iters:
        return max_learning_rate
    progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
    return min_learning_rate + 0.5 * (1 + math.cos(math.pi * progress)) * (max_learning_rate - min_learning_rate)
