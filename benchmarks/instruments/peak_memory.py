"""How much memory a call needs at its worst: the peak of tensor memory above what was in use before.

On CUDA torch's caching allocator keeps the statistic (torch.cuda.max_memory_allocated). On a CPU
there is no such counter, so the call runs under torch.profiler with profile_memory=True, which
records every allocation and free of a tensor's storage with its size and time; the peak is the
largest running sum of those records. (Process-wide measures such as the resident set size miss
memory that the C allocator reuses, and tracemalloc does not see torch's allocations at all.)

    peak = peak_memory(lambda: loss_fn(hidden, weight, targets).backward(), "cpu")
    # e.g. 2.6e9 bytes for float32 logits of 32,768 tokens x 10,000 ids and their gradient

Only memory allocated during the call counts; tensors that exist before it (inputs, weights) do
not, and memory the call leaves behind (e.g. .grad) counts while it is allocated.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def peak_memory(fn: Callable[[], object], device: torch.device | str = "cpu") -> int:
    """Bytes: the highest amount of tensor memory on `device` allocated by fn() at any moment."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    if device.type != "cpu":
        raise ValueError(f"peak_memory measures 'cpu' or 'cuda' memory, not {device.type!r}")
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    # the kineto records keep allocations and frees apart ('[memory]' events: +bytes / -bytes),
    # which the per-operator summary (prof.events()) folds into the enclosing operator
    records = sorted((event.start_ns(), event.nbytes()) for event in prof.profiler.kineto_results.events()
                     if event.name() == "[memory]" and event.device_type() == torch.autograd.DeviceType.CPU)
    current = peak = 0
    for _, nbytes in records:
        current += nbytes
        peak = max(peak, current)
    return peak
