"""Process-group setup for data-parallel training under ``torchrun`` (NCCL on GPU, gloo on CPU).

``torchrun --nproc_per_node N -m seqlab train ...`` sets RANK, WORLD_SIZE and LOCAL_RANK; without
them the run is a single process and nothing here touches torch.distributed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class DistributedContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def launched_by_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


class LeftToMainProcess(SystemExit):
    """Ends a torchrun process other than rank 0 quietly, with exit status 1 (what ``seqlab train``
    returns for the same error on rank 0), after an error every process meets alike: the main
    process prints the message once and the others do not repeat it. ``error`` is the original."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(1)
        self.error = error


def leave_to_main_process(error: BaseException) -> None:
    """Raise :class:`LeftToMainProcess` on a torchrun process other than rank 0; do nothing on the
    main process or without torchrun (the caller then re-raises ``error``).

    Only for errors that every process meets in the same way, e.g. an existing run in ``--out``:
    all of them read the same files and settings. The rank comes from the environment torchrun
    sets, so this works before the process group is joined."""
    if launched_by_torchrun() and int(os.environ["RANK"]) != 0:
        raise LeftToMainProcess(error) from error


def setup_distributed(device_kind: str) -> DistributedContext:
    """Join the process group torchrun describes; pick NCCL for CUDA, gloo otherwise."""
    if not launched_by_torchrun():
        return DistributedContext()
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if world > 1 and not dist.is_initialized():
        backend = "nccl" if device_kind == "cuda" else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=backend)
    return DistributedContext(rank, world, local_rank)


def all_reduce_mean(value: float, ctx: DistributedContext, device) -> float:
    """Mean of a Python float over all processes (the value itself when single-process)."""
    if not ctx.enabled:
        return value
    import torch
    import torch.distributed as dist

    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.item() / ctx.world_size


def all_reduce_sum_(tensor, ctx: DistributedContext):
    """Sum ``tensor`` over all processes in place, on its device, without reading it (no host wait)."""
    if ctx.enabled:
        import torch.distributed as dist

        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def any_true(flag: bool, ctx: DistributedContext, device) -> bool:
    """Whether ``flag`` holds on any process (so that all processes stop at the same step)."""
    if not ctx.enabled:
        return flag
    import torch
    import torch.distributed as dist

    tensor = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return bool(tensor.item())


def barrier(ctx: DistributedContext) -> None:
    """Wait until every process gets here (a run's end: no process tears the group down while
    another still talks to it, which can abort gloo's threads)."""
    if ctx.enabled:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.barrier()


def cleanup_distributed(ctx: DistributedContext) -> None:
    if ctx.enabled:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
