"""Turning a trained encoder-decoder into outputs: greedy decoding and beam search, batched.

Both read each source once (`model.encode`) and then extend all hypotheses of all sources by one
token per step (`model.decode_step`), so the per-step cost is one batched call whatever the
batch size. Outputs are token ids without BOS, cut before the first EOS.
"""

from __future__ import annotations

import torch

from seqlab.seq2seq.base import Seq2SeqModel, check_ids, check_mask
from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID


def _check_max_len(model: Seq2SeqModel, max_len: int) -> None:
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len <= 0:
        raise ValueError(f"max_len must be a positive integer, got {max_len!r}")
    limit = model.max_target_length
    if limit is not None and max_len > limit:
        raise ValueError(f"max_len={max_len} exceeds the model's max_seq_len={limit}; lower max_len")


def _strip(rows: list[list[int]]) -> list[list[int]]:
    """Cut each row before its first EOS."""
    return [row[: row.index(EOS_ID)] if EOS_ID in row else row for row in rows]


def _never_generated(logits: torch.Tensor) -> torch.Tensor:
    """logits (..., V) with PAD and BOS made impossible."""
    logits = logits.clone()
    logits[..., PAD_ID] = float("-inf")
    logits[..., BOS_ID] = float("-inf")
    return logits


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    """log softmax over the last dimension: logits - logsumexp(logits)."""
    logits = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    return logits - torch.logsumexp(logits, dim=-1, keepdim=True)


@torch.no_grad()
def greedy_decode(model: Seq2SeqModel, src_ids: torch.Tensor, src_padding_mask: torch.Tensor | None = None, *,
                  max_len: int) -> list[list[int]]:
    """The most likely next token at every step, up to max_len tokens (EOS included) per source.

    src_ids (B, S) -> B lists of ids. Finished rows keep being fed PAD (their output is ignored);
    the loop stops early once every row has produced EOS.
    """
    check_ids(src_ids, "src_ids")
    src_padding_mask = check_mask(src_padding_mask, src_ids, "src_padding_mask")
    _check_max_len(model, max_len)
    batch = src_ids.shape[0]
    state = model.encode(src_ids, src_padding_mask)
    tokens = torch.full((batch,), BOS_ID, dtype=torch.long, device=src_ids.device)
    finished = torch.zeros(batch, dtype=torch.bool, device=src_ids.device)
    out = []
    for _ in range(max_len):
        logits, state = model.decode_step(state, tokens)
        tokens = _never_generated(logits).argmax(-1).masked_fill(finished, PAD_ID)
        out.append(tokens)
        finished = finished | (tokens == EOS_ID)
        if bool(finished.all()):  # one sync per step; saves the remaining steps
            break
    return _strip(torch.stack(out, dim=1).tolist())
