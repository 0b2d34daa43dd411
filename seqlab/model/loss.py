"""Cross-entropy loss over a vocabulary, stable via log-sum-exp."""

from __future__ import annotations

import torch

from seqlab.model.checks import check_in_range, on_gpu_path

# on a CPU, rows of logits handled at a time hold about this many values (~4 MB of float32), so the
# temporaries of each block stay in the CPU cache instead of streaming a (N, vocab) copy to memory;
# on the GPU path all rows form one block (a fixed number of kernel launches, whatever the batch)
CHUNK_VALUES = 1 << 20


def _row_blocks(num_rows: int, vocab: int, one_block: bool):
    if one_block:
        yield slice(0, num_rows)
        return
    step = max(1, CHUNK_VALUES // max(1, vocab))
    for start in range(0, num_rows, step):
        yield slice(start, start + step)


class _CrossEntropyFunction(torch.autograd.Function):
    """mean_i [logsumexp(logits_i) - logits_i[target_i]] over rows of a (N, V) matrix.

    Saves only the logits and the per-row log-sum-exp; the backward forms (softmax - onehot) / N
    block by block, so no (N, V) log-softmax tensor is kept alive and each block's temporaries
    stay in cache.
    """

    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        compute = torch.promote_types(logits.dtype, torch.float32)
        num_rows, vocab = logits.shape
        log_sum_exp = torch.empty(num_rows, 1, dtype=compute, device=logits.device)
        ctx.one_block = on_gpu_path(logits)
        for rows in _row_blocks(num_rows, vocab, ctx.one_block):
            block = logits[rows].to(compute)
            row_max = block.amax(-1, keepdim=True)
            # subtracting the max keeps exp() <= 1: no overflow for huge logits
            sum_exp = (block - row_max).exp_().sum(-1, keepdim=True)
            log_sum_exp[rows] = row_max + sum_exp.log()
        target_logits = logits.gather(-1, targets[:, None]).to(compute)
        ctx.save_for_backward(logits, targets, log_sum_exp)
        # the loss stays in (at least) float32 even for bfloat16 logits
        return (log_sum_exp - target_logits).mean()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        logits, targets, log_sum_exp = ctx.saved_tensors
        num_rows, vocab = logits.shape
        scale = grad_out / num_rows
        grad = torch.empty_like(logits)
        # d loss / d logits = (softmax - onehot(target)) / N
        for rows in _row_blocks(num_rows, vocab, ctx.one_block):
            block = (logits[rows].to(log_sum_exp.dtype) - log_sum_exp[rows]).exp_().mul_(scale)
            grad[rows] = block
        grad.scatter_add_(-1, targets[:, None], (-scale).expand(num_rows, 1).to(grad.dtype))
        return grad, None


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of `targets` under softmax(`logits`).

    logits (..., vocab) float, targets (...) int in [0, vocab) -> scalar, averaged over all
    leading dimensions; computed and returned in at least float32 (bfloat16 logits under autocast
    still give a float32 loss).
    """
    if logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} disagree: targets must "
            f"have the logits' shape without the last (vocab) dimension"
        )
    vocab = logits.shape[-1]
    targets = targets.long()
    check_in_range(targets, vocab, "target id", f"[0, {vocab})")
    return _CrossEntropyFunction.apply(logits.reshape(-1, vocab), targets.reshape(-1))
