"""Counting what a piece of PyTorch code asks of the device: aten operations and host-device syncs.

Every aten operation that reaches a device is (at least) one kernel launch on a GPU, and each launch
costs a few microseconds of host time whatever its size; so a training step whose operation count
grows with the batch is launch-bound on a GPU. A host-device synchronisation (`.item()`,
`bool(tensor)`, `if tensor > x:`, `tensor.nonzero()`, ...) makes the host wait until the device has
finished everything queued so far, which empties the GPU's queue every time it happens.

    with OpCounter() as counter:
        loss = cross_entropy(model(x), y); loss.backward()
    counter.total, counter.syncs    # e.g. 1,052 operations, 0 synchronisations

Counted below autograd (a TorchDispatchMode), so the backward's operations are included, and the
same on every device; on the "meta" device (shapes only, no data) it counts big batches for free.
"""

from __future__ import annotations

from collections import Counter

from torch.utils._python_dispatch import TorchDispatchMode

# operations whose result the host must read (or whose output shape depends on the data)
SYNC_OPS = frozenset({
    "aten._local_scalar_dense",  # .item(), int(t), float(t), bool(t), `if t:`
    "aten.item",
    "aten.is_nonzero",
    "aten.nonzero",
    "aten.nonzero_static",
    "aten.masked_select",
    "aten.unique",
    "aten._unique",
    "aten._unique2",
    "aten.unique_consecutive",
    "aten.unique_dim",
    "aten.equal",
    "aten.allclose",
    "aten.repeat_interleave",  # without output_size its length depends on the data
    "aten.to_sparse",
})


def op_name(func) -> str:
    """'aten.mm' for the overload aten.mm.default (its packet's name)."""
    return f"{func.namespace}.{func._opname}"


class OpCounter(TorchDispatchMode):
    """Counts aten operations by name while active: .ops (Counter), .total, .syncs, .sync_ops."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[op_name(func)] += 1
        return func(*args, **(kwargs or {}))

    @property
    def total(self) -> int:
        return sum(self.ops.values())

    @property
    def sync_ops(self) -> Counter[str]:
        return Counter({name: n for name, n in self.ops.items() if name in SYNC_OPS})

    @property
    def syncs(self) -> int:
        return sum(self.sync_ops.values())
