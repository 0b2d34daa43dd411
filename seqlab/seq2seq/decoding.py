"""Turning a trained encoder-decoder into outputs: greedy decoding and beam search, batched, and
:func:`translate` for text.

Both read each source once (`model.encode`) and then extend all hypotheses of all sources by one
token per step (`model.decode_step`), so the per-step cost is one batched call whatever the
batch size. Outputs are token ids without BOS, cut before the first EOS.

Worked example (``run`` from :func:`seqlab.seq2seq.load_run`)::

    translate(run, ["Jan 15, 2020", "3/4/1999"])        # ["2020-01-15", "1999-03-04"], greedy
    translate(run, ["Jan 15, 2020"], beam_size=4)       # beam search
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from seqlab.model.activations import log_softmax
from seqlab.seq2seq.base import Seq2SeqModel, check_ids, check_mask
from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID
from seqlab.seq2seq.data import pad_sequences


def _check_max_len(model: Seq2SeqModel, max_len: int) -> None:
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len <= 0:
        raise ValueError(f"max_len must be a positive integer, got {max_len!r}")
    limit = model.max_target_length
    if limit is not None and max_len > limit:
        raise ValueError(f"max_len={max_len} exceeds the model's context_length={limit}; lower max_len")


def _strip(rows: list[list[int]]) -> list[list[int]]:
    """Cut each row before its first EOS."""
    return [row[: row.index(EOS_ID)] if EOS_ID in row else row for row in rows]


def _never_generated(logits: torch.Tensor) -> torch.Tensor:
    """logits (..., V) with PAD and BOS made impossible."""
    logits = logits.clone()
    logits[..., PAD_ID] = float("-inf")
    logits[..., BOS_ID] = float("-inf")
    return logits


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


@torch.no_grad()
def beam_search(model: Seq2SeqModel, src_ids: torch.Tensor, src_padding_mask: torch.Tensor | None = None, *,
                beam_size: int, max_len: int, length_penalty: float = 1.0) -> list[list[int]]:
    """Keep the beam_size best partial outputs per source; return the best finished one.

    All B * beam_size hypotheses are rows of one batch: each step scores every (hypothesis, next
    token) pair, keeps the beam_size best sums of log-probabilities per source, and reorders the
    decoder state to follow them (`state.select`). A hypothesis that has produced EOS is finished:
    its only continuation is PAD at log-probability 0, so its score stays fixed while it competes
    with the growing ones. At the end each source's hypotheses are ranked by
    score / length ** length_penalty (length counts EOS; 0 = raw sum, 1 = mean log-probability,
    which stops short outputs from winning just because they are short).

    Worked example (beam_size 2): step 1 keeps "a" (-0.1) and "b" (-2.3); step 2 expands both and
    keeps the best two of {"aa", "ab", "ba", "bb", ...}, maybe "ab" (-0.5) and "ba" (-2.4).
    beam_size=1 is greedy decoding (tested).
    """
    check_ids(src_ids, "src_ids")
    src_padding_mask = check_mask(src_padding_mask, src_ids, "src_padding_mask")
    _check_max_len(model, max_len)
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size <= 0:
        raise ValueError(f"beam_size must be a positive integer, got {beam_size!r}")
    if not isinstance(length_penalty, (int, float)) or length_penalty < 0:
        raise ValueError(f"length_penalty must be a number >= 0, got {length_penalty!r}")
    device = src_ids.device
    batch, K = src_ids.shape[0], beam_size
    state = model.encode(src_ids, src_padding_mask)
    state = state.select(torch.arange(batch, device=device).repeat_interleave(K))
    row_offset = torch.arange(batch, device=device)[:, None] * K  # first row of each source's beams
    score_dtype = torch.promote_types(next(model.parameters()).dtype, torch.float32)
    scores = torch.full((batch, K), float("-inf"), device=device, dtype=score_dtype)
    scores[:, 0] = 0.0  # all beams start as the same empty hypothesis: expand only one copy
    finished = torch.zeros(batch, K, dtype=torch.bool, device=device)
    lengths = torch.zeros(batch, K, dtype=torch.long, device=device)
    history = torch.zeros(batch, K, 0, dtype=torch.long, device=device)
    tokens = torch.full((batch * K,), BOS_ID, dtype=torch.long, device=device)
    for _ in range(max_len):
        logits, state = model.decode_step(state, tokens)
        vocab = logits.shape[-1]
        logp = log_softmax(_never_generated(logits)).view(batch, K, vocab).to(scores.dtype)
        pad_only = torch.full_like(logp[:1, :1], float("-inf"))
        pad_only[..., PAD_ID] = 0.0
        logp = torch.where(finished[..., None], pad_only, logp)
        top_scores, top = (scores[..., None] + logp).view(batch, K * vocab).topk(K, dim=-1)
        beam, token = top // vocab, top % vocab
        history = torch.cat((history.gather(1, beam[..., None].expand(-1, -1, history.shape[-1])),
                             token[..., None]), dim=-1)
        was_finished = finished.gather(1, beam)
        lengths = lengths.gather(1, beam) + (~was_finished).long()
        finished = was_finished | (token == EOS_ID)
        scores = top_scores
        state = state.select((beam + row_offset).view(-1))
        tokens = token.view(-1)
        if bool(finished.all()):  # one sync per step; saves the remaining steps
            break
    ranked = scores / lengths.clamp_min(1).to(scores.dtype) ** length_penalty
    best = ranked.argmax(-1)
    return _strip(history[torch.arange(batch, device=device), best].tolist())


def decode_limit(model, examples_or_lengths) -> int:
    """How many tokens to generate at most: twice the longest reference plus 8 (EOS included),
    capped by the model's position table."""
    longest = max(examples_or_lengths) if examples_or_lengths else 1
    limit = model.max_target_length
    wanted = 2 * longest + 8
    return min(wanted, limit) if limit is not None else wanted


@torch.no_grad()
def translate_ids(model, sources: list[list[int]], *, beam_size: int = 1, max_len: int,
                  batch_size: int = 256, device=None) -> list[list[int]]:
    """Generate a target for every source (greedy for beam_size 1), in batches, in input order.

    Sources are decoded in order of length so each batch holds similar lengths (less padding)."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    outputs: list[list[int]] = [[] for _ in sources]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            src, mask = pad_sequences([sources[i] for i in rows], device=device)
            if beam_size == 1:
                hyps = greedy_decode(model, src, mask, max_len=max_len)
            else:
                hyps = beam_search(model, src, mask, beam_size=beam_size, max_len=max_len)
            for i, hyp in zip(rows, hyps):
                outputs[i] = hyp
    finally:
        model.train(was_training)
    return outputs


def translate(run, texts: Sequence[str], *, beam_size: int = 1, batch_size: int = 256) -> list[str]:
    """Translate each text with a loaded run (``run.model``, ``run.src_vocab``, ``run.tgt_vocab``,
    e.g. :func:`seqlab.seq2seq.load_run`'s): greedy for ``beam_size`` 1, else beam search."""
    sources = [run.src_vocab.encode(text) for text in texts]
    limit = decode_limit(run.model, [len(s) + 1 for s in sources])
    device = next(run.model.parameters()).device
    outputs = translate_ids(run.model, sources, beam_size=beam_size, max_len=limit, batch_size=batch_size,
                            device=device)
    return [run.tgt_vocab.decode(out) for out in outputs]
