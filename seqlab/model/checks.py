"""Range checks of index tensors (token ids, positions, targets), and the "GPU path" they follow.

On a CPU a check can look at the values at once and raise a ValueError saying which id is wrong and
where. On a GPU that would stop the host until the device has caught up (a host-device
synchronisation, e.g. `bool(tensor)` or `.item()`), every training step. So on the GPU path a check
is queued as a device-side assertion instead (`torch._assert_async`): no waiting, and a bad id
still fails the run, with a RuntimeError carrying the same message, a moment later.

The GPU path is taken for every tensor not on the CPU, under torch.compile, and for CPU tensors
inside `with gpu_path_forced():` (how the tests count synchronisations on a machine without GPU).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

_gpu_path_forced = False


@contextmanager
def gpu_path_forced() -> Iterator[None]:
    """Inside this block CPU tensors take the GPU path too (sync-free checks, unchunked kernels).

    Example: with gpu_path_forced(): loss = cross_entropy(model(ids), targets)
    """
    global _gpu_path_forced
    previous, _gpu_path_forced = _gpu_path_forced, True
    try:
        yield
    finally:
        _gpu_path_forced = previous


def on_gpu_path(tensor: torch.Tensor) -> bool:
    """True when work on `tensor` must avoid host-device synchronisations and per-chunk launches."""
    return _gpu_path_forced or tensor.device.type != "cpu"


def check_in_range(values: torch.Tensor, upper: int, what: str, allowed: str,
                   where_text=lambda where: f"index {where}") -> None:
    """Fail for the first entry of `values` (any shape) outside [0, upper).

    CPU (eager): ValueError("{what} V at index (i, j) is outside {allowed}"); ``where_text`` turns
    the index tuple into other words (e.g. "position 7").
    GPU path and torch.compile: a device-side assertion (RuntimeError) with the message "{what}
    outside {allowed} ..."; it does not wait for the device and does not split a compiled graph.
    """
    if values.numel() == 0:
        return
    if torch.compiler.is_compiling() or on_gpu_path(values):
        inside = ((values >= 0) & (values < upper)).all()
        torch._assert_async(inside, f"{what} outside {allowed} (checked on the device without waiting; "
                                    f"run the same input on the CPU to see which entry)")
        return
    bad = (values < 0) | (values >= upper)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        at = where_text(where) if where else ""
        raise ValueError(f"{what} {int(values[where])}{' at ' + at if at else ''} is outside {allowed}")


def check_positions(token_positions: torch.Tensor, max_seq_len: int, table: str) -> None:
    """Fail for the first token position outside [0, max_seq_len) of ``table`` (the rotary
    embedding, the position table): the one range check of positions, as check_in_range does it."""
    check_in_range(token_positions, max_seq_len, "token position",
                   f"[0, max_seq_len={max_seq_len}) of {table}; raise max_seq_len (the context length)")
