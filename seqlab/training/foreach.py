"""Multi-tensor ("foreach") updates: one torch._foreach_* call works on a whole list of tensors.

A per-parameter Python loop launches a few kernels per parameter tensor and pays Python's overhead
for each; ``torch._foreach_mul_(tensors, 0.9)`` is one call for the whole list (on CUDA a handful of
kernels over many tensors at once). The lists must share a device and a dtype, so the tensors are
bucketed first:

    >>> buckets = by_device_and_dtype([w1, b1, w2], [g1, gb1, g2])   # two lists walked in parallel
    >>> {key: len(lists[0]) for key, lists in buckets.items()}
    {(device(type='cpu'), torch.float32): 3}

``use_foreach(flag, example)`` is AdamW's rule for ``foreach=None``: the foreach form on CUDA (and
any non-CPU device) and on the forced GPU path (seqlab.model.gpu_path_forced), the per-tensor loop
on a CPU, where benchmarks/adamw_foreach.py measured the foreach AdamW 2.2x slower (torch's CPU
foreach kernels run op by op over every tensor, so each op streams all the optimizer state through
memory, where the loop keeps one parameter's tensors in cache).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from seqlab.model.checks import on_gpu_path


def use_foreach(flag: bool | None, example: torch.Tensor) -> bool:
    """flag if given, else True for tensors on the GPU path (see the module docstring).

    Example: use_foreach(None, torch.zeros(1)) is False; use_foreach(True, torch.zeros(1)) is True.
    """
    if flag is not None:
        return flag
    return on_gpu_path(example)


def by_device_and_dtype(*lists: Sequence[torch.Tensor]) -> dict[tuple[torch.device, torch.dtype], list[list]]:
    """Bucket the i-th entries of parallel lists by the (device, dtype) of the first list's i-th tensor.

    Returns {(device, dtype): [sublist of lists[0], sublist of lists[1], ...]} in first-seen order.
    """
    buckets: dict[tuple[torch.device, torch.dtype], list[list]] = {}
    for entries in zip(*lists):
        key = (entries[0].device, entries[0].dtype)
        bucket = buckets.setdefault(key, [[] for _ in lists])
        for sublist, entry in zip(bucket, entries):
            sublist.append(entry)
    return buckets
