"""Scoring a seq2seq model: the teacher-forced loss and accuracy on validation pairs, and the
exact match, token accuracy and BLEU of its generated translations.

Worked example (a run's model and vocabularies, see :func:`seqlab.seq2seq.loading.load_run`)::

    scores = evaluate_translations(run.model, [("Jan 15, 2020", "2020-01-15")], run.src_vocab, run.tgt_vocab)
    scores.exact_match, scores.hypotheses        # 1.0, ["2020-01-15"] for a trained model
    loss, accuracy = teacher_forced_loss(run.model, examples, batch_size=256, device="cpu")

The loss is the mean cross-entropy over real (non-PAD) target tokens, :func:`masked_cross_entropy`:
the loss the training engine minimises for this task.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from seqlab.model.loss import cross_entropy
from seqlab.runtime import autocast_context
from seqlab.seq2seq.builtin_tasks import TEXT_TASKS
from seqlab.seq2seq.config import PAD_ID
from seqlab.seq2seq.data import Example, batches_in_order, collate
from seqlab.seq2seq.decoding import decode_limit, translate_ids
from seqlab.seq2seq.metrics import (
    bleu,
    exact_match,
    teacher_forced_accuracy,
    token_accuracy,
)


def masked_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over non-PAD targets of ``logsumexp(logits) - logits[target]`` (float32 or wider).

    logits (B, T, V), targets (B, T) with PAD_ID where nothing is to be predicted."""
    return cross_entropy(logits, targets, ignore_index=PAD_ID)


@dataclass
class TranslationScores:
    """How well generated translations match their references (:func:`evaluate_translations`)."""

    exact_match: float
    token_accuracy: float          # on generated outputs, position by position
    bleu: float | None             # text tasks only
    hypotheses: list[str]
    references: list[str]
    sources: list[str]


def evaluate_translations(model, pairs: list[tuple[str, str]], src_vocab, tgt_vocab, *, beam_size: int = 1,
                          with_bleu: bool = False, device=None, batch_size: int = 256) -> TranslationScores:
    """Generate a translation of every source and score it against its reference."""
    sources = [src_vocab.encode(s) for s, _ in pairs]
    refs_ids = [tgt_vocab.encode(t) for _, t in pairs]
    max_len = decode_limit(model, [len(r) + 1 for r in refs_ids])
    hyps_ids = translate_ids(model, sources, beam_size=beam_size, max_len=max_len, device=device,
                             batch_size=batch_size)
    hyps = [tgt_vocab.decode(h) for h in hyps_ids]
    refs = [t for _, t in pairs]
    return TranslationScores(exact_match=exact_match(hyps, refs), token_accuracy=token_accuracy(hyps_ids, refs_ids),
                             bleu=bleu(hyps, refs) if with_bleu else None, hypotheses=hyps, references=refs,
                             sources=[s for s, _ in pairs])


@torch.no_grad()
def teacher_forced_loss(model, examples: list[Example], *, batch_size: int, device,
                        precision: str = "fp32") -> tuple[float, float]:
    """(mean cross-entropy per target token, teacher-forced next-token accuracy) on ``examples``."""
    was_training = model.training
    model.eval()
    device = torch.device(device)
    total = torch.zeros((), dtype=torch.float64, device=device)
    count = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.float64, device=device)
    try:
        for _, chunk in batches_in_order(examples, batch_size):
            batch = collate(chunk, device=device)
            with autocast_context(precision, device):
                logits = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)
            tokens = batch.tgt_mask.sum()
            total += masked_cross_entropy(logits.float(), batch.tgt_out).double() * tokens
            hits, counted = teacher_forced_accuracy(logits, batch.tgt_out)
            count += counted
            correct += hits
    finally:
        model.train(was_training)
    return float(total / count), float(correct / count)


def is_text_task(cfg) -> bool:
    """BLEU is reported for natural-language data: the text tasks and --pairs files."""
    return cfg.task in TEXT_TASKS or cfg.pairs is not None
