"""Validation loss during training: the mean loss over fixed validation windows.

The windows come from a generator seeded with ``seed + 1``, so every evaluation of a run sees the
same windows, whatever the step, and however the global batch is split into processes and
micro-batches (``rows`` are this process's rows of each global batch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from seqlab.lm.data import get_batch
from seqlab.model import TransformerLM
from seqlab.progressbar import progress_bar as tqdm
from seqlab.model.loss import cross_entropy
from seqlab.runtime import autocast_context
from seqlab.tokenizer.token_array import check_token_array


@torch.no_grad()
def validation_loss(model: torch.nn.Module, valid: np.ndarray, *, batches: int, global_batch: int,
                    context_length: int, seed: int, rows: list[slice], precision: str,
                    device: torch.device) -> float:
    """Mean cross-entropy of ``model`` over ``batches`` global batches of this process's ``rows``."""
    sampler = np.random.default_rng(seed + 1)
    losses = []
    for _ in range(batches):
        inputs, targets = get_batch(valid, global_batch, context_length, "cpu", generator=sampler)
        for part in rows:
            with autocast_context(precision, device):
                logits = model(inputs[part].to(device))
            losses.append(cross_entropy(logits.float(), targets[part].to(device)))
    return torch.stack(losses).mean().item()



MAX_EXP = math.log(1.7e308)  # math.exp raises OverflowError above this (a float64 is at most 1.8e308)


@dataclass
class EvalResult:
    loss: float          # mean cross-entropy per predicted token, nats
    perplexity: float    # exp(loss)
    tokens: int          # number of predicted tokens (= len(data) - 1)
    windows: int         # number of windows evaluated


def window_starts(num_tokens: int, context_length: int) -> list[tuple[int, int]]:
    """(start, length) of each window over a split of ``num_tokens`` ids; lengths sum to
    num_tokens - 1 (the first token is never a target)."""
    predicted = num_tokens - 1
    return [(start, min(context_length, predicted - start))
            for start in range(0, predicted, context_length)]


def evaluate(model: TransformerLM, data: np.ndarray, batch_size: int = 32, context_length: int | None = None,
             progress: bool = False, name: str = "data") -> EvalResult:
    """Mean per-token loss and perplexity of ``model`` over all of ``data`` (1-D integer array).

    Windows of ``context_length`` (default the model's) are batched ``batch_size`` at a time, in
    inference mode (no autograd bookkeeping at all); a batch's windows are one strided view of
    ``data`` copied once, and the shorter last window runs in its own batch. ``progress`` shows a
    progress bar.
    """
    data = np.asarray(data)  # a memmap stays on disk (a view, no copy)
    if data.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of token ids, got shape {data.shape}")
    if not np.issubdtype(data.dtype, np.integer):
        raise ValueError(f"{name}: expected integer token ids, got dtype {data.dtype}")
    if len(data) < 2:
        raise ValueError(f"{name}: needs at least 2 tokens to predict one, has {len(data)}")
    n = model.config.context_length if context_length is None else context_length
    if not 0 < n <= model.config.context_length:
        raise ValueError(f"context_length must be in [1, {model.config.context_length}], got {n}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    check_token_array(data, model.config.vocab_size, name)
    device = next(model.parameters()).device

    windows = window_starts(len(data), n)
    full = [w for w in windows if w[1] == n]
    batches = [full[i:i + batch_size] for i in range(0, len(full), batch_size)]
    if len(full) < len(windows):
        batches.append(windows[len(full):])  # the shorter tail window

    total_loss, total_tokens = 0.0, 0
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for batch in tqdm(batches, desc=f"eval {name}", unit="batch", disable=not progress):
                (first, length), count_rows = batch[0], len(batch)
                # rows first + i·length .. + length + 1 (consecutive windows overlap by one target token)
                span = data[first:first + count_rows * length + 1]
                rows = np.lib.stride_tricks.sliding_window_view(span, length + 1)[::length][:count_rows]
                tokens = torch.from_numpy(rows.astype(np.int64)).to(device)
                logits = model(tokens[:, :-1])
                loss = cross_entropy(logits.float(), tokens[:, 1:])  # mean over this batch
                count = tokens.shape[0] * length
                total_loss += float(loss) * count
                total_tokens += count
    finally:
        model.train(was_training)
    mean = total_loss / total_tokens
    perplexity = math.inf if mean >= MAX_EXP else math.exp(mean)  # nan stays nan
    return EvalResult(loss=mean, perplexity=perplexity, tokens=total_tokens, windows=len(windows))
