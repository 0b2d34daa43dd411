"""How good are the translations: exact match, token accuracy, accuracy by length, BLEU.

    exact_match(["2026-11-29", "1999-01-02"], ["2026-11-29", "1999-01-20"])      -> 0.5
    token_accuracy(["2026-11-29", "1999-01-02"], ["2026-11-29", "1999-01-20"])   -> 0.9 (18 of 20)

Token accuracy compares position by position over the longer sequence, so a missing or extra
token is an error. BLEU (sacrebleu's corpus BLEU, 0..100) gives a nearly-right sentence partial
credit, which suits the text tasks.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from seqlab.seq2seq.config import PAD_ID


def _check_lengths(hyps: Sequence, refs: Sequence) -> None:
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references: they must pair up one to one")


def exact_match(hyps: Sequence[Sequence], refs: Sequence[Sequence]) -> float:
    """Fraction of outputs equal to their reference (strings or id lists); 0.0 for no pairs."""
    _check_lengths(hyps, refs)
    if not refs:
        return 0.0
    return sum(list(h) == list(r) for h, r in zip(hyps, refs)) / len(refs)


def token_accuracy(hyps: Sequence[Sequence], refs: Sequence[Sequence]) -> float:
    """Matching positions / positions of the longer sequence, summed over all pairs."""
    _check_lengths(hyps, refs)
    correct = total = 0
    for h, r in zip(hyps, refs):
        correct += sum(a == b for a, b in zip(h, r))
        total += max(len(h), len(r))
    return correct / total if total else 0.0


def accuracy_by_length(hyps: Sequence[Sequence], refs: Sequence[Sequence],
                       lengths: Sequence[int]) -> dict[int, dict[str, float]]:
    """Exact match grouped by ``lengths`` (usually the source lengths):
    ``{length: {"exact_match": fraction, "count": n}}`` in increasing length."""
    _check_lengths(hyps, refs)
    _check_lengths(lengths, refs)
    groups: dict[int, list[bool]] = {}
    for h, r, n in zip(hyps, refs, lengths):
        groups.setdefault(int(n), []).append(list(h) == list(r))
    return {n: {"exact_match": sum(g) / len(g), "count": len(g)} for n, g in sorted(groups.items())}


def teacher_forced_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(correct, counted) next-token predictions, PAD targets not counted; both 0-dim tensors
    (no host sync: the caller adds them up and reads them once)."""
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} disagree")
    real = targets != PAD_ID
    return ((logits.argmax(-1) == targets) & real).sum(), real.sum()


def sacrebleu_missing_message() -> str:
    return "BLEU needs the package sacrebleu: pip install sacrebleu"


def bleu(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Corpus BLEU (0..100) of detokenised strings with one reference each, by sacrebleu."""
    _check_lengths(hyps, refs)
    try:
        import sacrebleu
    except ImportError:
        raise RuntimeError(sacrebleu_missing_message()) from None
    return float(sacrebleu.corpus_bleu(list(hyps), [list(refs)]).score)
