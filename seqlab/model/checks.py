"""Range checks of index tensors (token ids, positions, targets) whose errors say what and where."""

from __future__ import annotations

import torch


def check_in_range(values: torch.Tensor, upper: int, what: str, allowed: str) -> None:
    """Raise ValueError("{what} V at index (i, j) is outside {allowed}") for the first entry of
    `values` (any shape) outside [0, upper).

    Skipped under torch.compile: a data-dependent check would split the compiled graph.
    """
    if values.numel() == 0 or torch.compiler.is_compiling():
        return
    bad = (values < 0) | (values >= upper)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"{what} {int(values[where])} at index {where} is outside {allowed}")
