"""Cross-entropy loss over a vocabulary, stable via log-sum-exp."""

from __future__ import annotations

import torch


class _CrossEntropyFunction(torch.autograd.Function):
    """mean_i [logsumexp(logits_i) - logits_i[target_i]] over rows of a (N, V) matrix.

    Saves only the logits and the per-row log-sum-exp; the backward forms softmax - onehot in one
    pass instead of keeping a (N, V) log-softmax tensor alive.
    """

    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        compute = torch.promote_types(logits.dtype, torch.float32)
        row_max = logits.amax(-1, keepdim=True).to(compute)  # (N, 1)
        # subtracting the max keeps exp() <= 1: no overflow for huge logits
        sum_exp = (logits.to(compute) - row_max).exp_().sum(-1, keepdim=True)
        log_sum_exp = row_max + sum_exp.log()  # (N, 1)
        target_logits = logits.gather(-1, targets[:, None]).to(compute)
        ctx.save_for_backward(logits, targets, log_sum_exp)
        # the loss stays in (at least) float32 even for bfloat16 logits
        return (log_sum_exp - target_logits).mean()

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        logits, targets, log_sum_exp = ctx.saved_tensors
        num_rows = logits.shape[0]
        # d loss / d logits = (softmax - onehot(target)) / N
        grad = (logits.to(log_sum_exp.dtype) - log_sum_exp).exp_()
        grad.scatter_add_(-1, targets[:, None], torch.full_like(log_sum_exp, -1.0))
        grad.mul_(grad_out / num_rows)
        return grad.to(logits.dtype), None


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
    if targets.numel() and not torch.compiler.is_compiling():
        bad = (targets < 0) | (targets >= vocab)
        if bool(bad.any()):
            where = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"target id {int(targets[where])} at index {where} is outside [0, {vocab})")
    return _CrossEntropyFunction.apply(logits.reshape(-1, vocab), targets.reshape(-1))
