"""Cross-entropy loss over a vocabulary, stable via log-sum-exp, and the LM head fused with it.

`cross_entropy(logits, targets)` takes logits someone else computed. `linear_cross_entropy(hidden,
weight, targets)` takes the last hidden states and the LM head's weight instead and never forms the
logits of every token at once: it is the readable path (logits = hidden @ weight.T, then
cross_entropy) computed a block of tokens at a time, forward and backward.
"""

from __future__ import annotations

import torch

from seqlab.model.checks import check_in_range, on_gpu_path

# on a CPU, rows of logits handled at a time hold about this many values (~4 MB of float32), so the
# temporaries of each block stay in the CPU cache instead of streaming a (N, vocab) copy to memory;
# on the GPU path and under torch.compile all rows form one block (a fixed number of kernel launches,
# whatever the batch)
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
        ctx.one_block = torch.compiler.is_compiling() or on_gpu_path(logits)  # a fixed number of ops
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
            if grad.dtype == log_sum_exp.dtype:  # formed in grad's own rows: no block to copy there
                torch.sub(logits[rows], log_sum_exp[rows], out=grad[rows]).exp_().mul_(block_scale)
            else:
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


# linear_cross_entropy on a CPU in eager mode: tokens per block when chunk_size is None, chosen with
# benchmarks/linear_cross_entropy.py; a block's float32 logits take
# LINEAR_CE_CPU_ROWS * vocab * 4 bytes (20 MB at vocab 10,000)
LINEAR_CE_CPU_ROWS = 512
# on the GPU path (and under torch.compile) the tokens are cut into this many blocks instead, so the
# number of launched kernels does not grow with the batch; each block holds 1/8 of the logits
LINEAR_CE_GPU_BLOCKS = 8


def _token_blocks(num_rows: int, chunk_size: int | None, one_launch_count: bool) -> list[slice]:
    """Slices covering 0..num_rows: of chunk_size rows, or LINEAR_CE_GPU_BLOCKS near-equal blocks."""
    if chunk_size is None and one_launch_count:
        bounds = [num_rows * i // LINEAR_CE_GPU_BLOCKS for i in range(LINEAR_CE_GPU_BLOCKS + 1)]
        return [slice(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    step = chunk_size or LINEAR_CE_CPU_ROWS
    return [slice(start, min(num_rows, start + step)) for start in range(0, num_rows, step)]


class _LinearCrossEntropyFunction(torch.autograd.Function):
    """mean_i [logsumexp(h_i W^T) - h_i . W[t_i]] over the rows h_i of a (N, d) matrix, block by block.

    Forward keeps per token only the log-sum-exp of its logits (N float32 numbers); backward
    recomputes each block's logits z = h W^T and forms dz = (softmax(z) - onehot(t)) * share,
    then grad_hidden[block] = dz W and grad_weight += dz^T h[block]. So the largest temporaries are
    a few (block, vocab) tensors whatever N is.
    """

    @staticmethod
    def forward(ctx, hidden, weight, targets, ignore_index, blocks, padded_vocab):
        compute = torch.promote_types(hidden.dtype, torch.float32)
        num_rows = hidden.shape[0]
        vocab = weight.shape[0]
        if padded_vocab > vocab:
            # zero rows up to padded_vocab: each block's logits are (block, padded_vocab), a GEMM whose
            # sizes and row stride are multiples of the padding; the extra logits are set to -inf
            # below, so they add nothing to the softmax and get no gradient
            weight = torch.cat((weight, weight.new_zeros(padded_vocab - vocab, weight.shape[1])))
        kept = None if ignore_index is None else targets != ignore_index
        # an ignored target may be any id (-100 is common): it reads logit 0 and is weighted 0
        safe_targets = targets if kept is None else torch.where(kept, targets, 0)
        log_sum_exp = hidden.new_empty(num_rows, dtype=compute)
        target_logits = hidden.new_empty(num_rows, dtype=compute)
        for rows in blocks:
            logits = _block_logits(hidden[rows], weight, vocab, compute)  # (block, padded vocab)
            row_max = logits.amax(-1, keepdim=True)
            target_logits[rows] = logits.gather(-1, safe_targets[rows, None]).squeeze(-1)
            # subtracting the max keeps exp() <= 1: no overflow for huge logits
            log_sum_exp[rows] = (row_max + (logits - row_max).exp_().sum(-1, keepdim=True).log()).squeeze(-1)
        nll = log_sum_exp - target_logits
        row_weights = None
        if kept is not None:
            # each kept row's share of the mean is 1/(rows kept), an ignored row's 0; counted on the
            # device (no host read); every row ignored gives 0 / 1 = 0
            kept = kept.to(compute)
            row_weights = kept / kept.sum().clamp_min(1.0)
        ctx.save_for_backward(hidden, weight, safe_targets, log_sum_exp, row_weights)
        ctx.blocks, ctx.vocab = blocks, vocab
        return nll.mean() if row_weights is None else (nll * row_weights).sum()

    @staticmethod
    def backward(ctx, grad_out):
        hidden, weight, targets, log_sum_exp, row_weights = ctx.saved_tensors
        num_rows = hidden.shape[0]
        compute = log_sum_exp.dtype
        # each row's share of d loss: grad_out / N, or grad_out * its row weight
        share = (grad_out / num_rows).expand(num_rows) if row_weights is None else grad_out * row_weights
        share = share[:, None]  # (N, 1)
        grad_hidden = torch.empty_like(hidden)
        # accumulated in float32 over the blocks also when the weight is bfloat16
        grad_weight = torch.zeros(weight.shape, dtype=compute, device=weight.device)
        for rows in ctx.blocks:
            block = hidden[rows]
            logits = _block_logits(block, weight, ctx.vocab, compute)
            # d loss / d logits = (softmax - onehot(target)) * share
            grad_logits = logits.sub_(log_sum_exp[rows, None]).exp_().mul_(share[rows])
            grad_logits.scatter_add_(-1, targets[rows, None], -share[rows])
            grad_logits = grad_logits.to(hidden.dtype)
            grad_hidden[rows] = grad_logits @ weight
            if grad_weight.dtype == block.dtype:
                grad_weight.addmm_(grad_logits.t(), block)
            else:
                grad_weight += (grad_logits.t() @ block).to(compute)
        # padded rows (if any) are not the caller's: their gradient is dropped
        return grad_hidden, grad_weight[:ctx.vocab].to(weight.dtype), None, None, None, None


def _block_logits(block: torch.Tensor, weight: torch.Tensor, vocab: int, compute: torch.dtype) -> torch.Tensor:
    """block @ weight.T in ``compute`` precision; columns from ``vocab`` on (vocabulary padding) are -inf."""
    logits = (block @ weight.t()).to(compute)
    if weight.shape[0] > vocab:
        logits[:, vocab:] = float("-inf")
    return logits


def linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, *,
                         ignore_index: int | None = None, chunk_size: int | None = None,
                         pad_vocab_multiple: int | None = None) -> torch.Tensor:
    """cross_entropy(hidden @ weight.T, targets) without holding the logits of every token at once.

    hidden (..., d) float, weight (vocab, d) (the LM head, no bias), targets (...) int ->
    scalar float32 (at least), the mean over the tokens, like ``cross_entropy`` (and ignore_index
    as there: ignored tokens count neither in the mean nor in the gradients, and if every target is
    ignored the loss is 0; an ignored target may hold any id, e.g. -100).

    The tokens are processed ``chunk_size`` at a time (default LINEAR_CE_CPU_ROWS on a CPU,
    LINEAR_CE_GPU_BLOCKS equal blocks on the GPU path and under torch.compile, so the number of
    kernels stays fixed whatever the batch); backward recomputes each block's logits from the
    saved hidden states and per-token log-sum-exp. Under autocast the matmuls run in the autocast
    dtype and the softmax in float32.

    pad_vocab_multiple: compute the logits over the vocabulary rounded up to a multiple of this
    (zero weight rows added here, their logits -inf), so the LM head's matmul has aligned sizes, as
    GPU matrix kernels prefer (e.g. 50,257 -> 50,304 with 128); the loss and the weight's gradient
    are unchanged, and nothing outside this function sees the padding (no ids, no sampled logits).

    Example: 32,768 tokens, vocab 10,000, d 512: the full logits and their gradient take 2.6 GB
    of float32; here a forward + backward peaks at a few (512 x 10,000) blocks, under 0.5 GB.

        >>> h = torch.tensor([[1.0, 0.0], [0.0, 2.0]]); W = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> # logits [[1, 0, 0], [0, 2, 0]]: losses log(1 + 2/e) = 0.5514 and log(1 + 2/e^2) = 0.2395
        >>> round(linear_cross_entropy(h, W, torch.tensor([0, 1])).item(), 4)
        0.3955
    """
    if hidden.shape[:-1] != targets.shape:
        raise ValueError(
            f"hidden {tuple(hidden.shape)} and targets {tuple(targets.shape)} disagree: targets must "
            f"have the hidden states' shape without the last (feature) dimension"
        )
    if weight.dim() != 2 or weight.shape[1] != hidden.shape[-1]:
        raise ValueError(
            f"weight {tuple(weight.shape)} must be (vocab, d) with d = {hidden.shape[-1]}, the last "
            f"dimension of hidden {tuple(hidden.shape)} (pass the LM head's weight, not its transpose)"
        )
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive number of tokens, got {chunk_size}")
    if pad_vocab_multiple is not None and pad_vocab_multiple < 1:
        raise ValueError(f"pad_vocab_multiple must be a positive number of rows, got {pad_vocab_multiple}")
    vocab = weight.shape[0]
    multiple = pad_vocab_multiple or 1
    padded_vocab = -(-vocab // multiple) * multiple
    targets = targets.long().reshape(-1)
    counted = targets if ignore_index is None else torch.where(targets == ignore_index, 0, targets)
    check_in_range(counted, vocab, "target id", f"[0, {vocab})")
    device_type = hidden.device.type
    if torch.is_autocast_enabled(device_type):
        # the matmuls in the autocast dtype, as hidden @ weight.T would run; the cast is recorded by
        # autograd, so float32 parameters receive float32 gradients
        dtype = torch.get_autocast_dtype(device_type)
        hidden, weight = hidden.to(dtype), weight.to(dtype)
    hidden = hidden.reshape(-1, hidden.shape[-1])
    gpu_like = torch.compiler.is_compiling() or on_gpu_path(hidden)
    blocks = _token_blocks(hidden.shape[0], chunk_size, gpu_like)
    with torch.autocast(device_type, enabled=False):
        return _LinearCrossEntropyFunction.apply(hidden, weight, targets, ignore_index, blocks, padded_vocab)
