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
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor, ignore_index: int | None) -> torch.Tensor:
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
        # each row's share of the mean: 1/N, or with ignore_index 1/(rows kept) for kept rows and 0
        # for ignored ones (a tensor, so counting the kept rows needs no host read)
        row_weights = None
        if ignore_index is not None:
            kept = (targets != ignore_index)[:, None].to(compute)
            row_weights = kept / kept.sum().clamp_min(1.0)
        ctx.save_for_backward(logits, targets, log_sum_exp, row_weights)
        # the loss stays in (at least) float32 even for bfloat16 logits
        nll = log_sum_exp - target_logits
        return nll.mean() if row_weights is None else (nll * row_weights).sum()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        logits, targets, log_sum_exp, row_weights = ctx.saved_tensors
        num_rows, vocab = logits.shape
        # d loss / d logits_i = (softmax_i - onehot(target_i)) * (row i's share of the mean)
        scale = grad_out / num_rows if row_weights is None else grad_out * row_weights  # scalar or (N, 1)
        grad = torch.empty_like(logits)
        for rows in _row_blocks(num_rows, vocab, ctx.one_block):
            block_scale = scale if row_weights is None else scale[rows]
            grad[rows] = (logits[rows].to(log_sum_exp.dtype) - log_sum_exp[rows]).exp_().mul_(block_scale)
        grad.scatter_add_(-1, targets[:, None], (-scale).expand(num_rows, 1).to(grad.dtype))
        return grad, None, None


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, *, ignore_index: int | None = None) -> torch.Tensor:
    """Mean negative log-likelihood of `targets` under softmax(`logits`).

    logits (..., vocab) float, targets (...) int in [0, vocab) -> scalar, averaged over all
    leading dimensions; computed and returned in at least float32 (bfloat16 logits under autocast
    still give a float32 loss). With ``ignore_index`` (e.g. the padding id of a seq2seq batch) the
    mean is over the other targets only and ignored positions get no gradient; if every target is
    ignored the loss is 0.
    """
    if logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} disagree: targets must "
            f"have the logits' shape without the last (vocab) dimension"
        )
    vocab = logits.shape[-1]
    targets = targets.long()
    check_in_range(targets, vocab, "target id", f"[0, {vocab})")
    return _CrossEntropyFunction.apply(logits.reshape(-1, vocab), targets.reshape(-1), ignore_index)
