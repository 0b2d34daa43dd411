"""The pairs of one seq2seq run: a built-in task or a TSV file, split into training and validation,
their vocabularies, their ids, and the length filter.

Everything here is a pure function of the settings (the same seed gives the same split on every
machine), so ``seqlab seq2seq eval`` can rebuild a run's validation pairs from its config::

    train, valid, problems = load_pairs(config)           # lists of (source, target) text
    data = prepare_data(config)                           # + vocabularies, ids, context length

A resumed run passes its saved vocabularies (``prepare_data(config, vocabs)``); the pairs are then
checked against them: a character the vocabulary never saw would silently become UNK, so it is
refused (:func:`unknown_characters`), and :func:`fingerprint` tells when the pairs changed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import torch

from seqlab.seq2seq.config import UNK_ID
from seqlab.seq2seq.data import Example, encode_pairs, read_pairs_tsv, split_by_length
from seqlab.seq2seq.tasks import make_pairs
from seqlab.seq2seq.train_config import Seq2SeqTrainConfig
from seqlab.seq2seq.vocab import CharVocab, load_bpe_vocab, train_bpe_vocab

VALID_SEED_OFFSET = 1_000_003  # validation pairs come from another stream of the same generator


@dataclass
class Seq2SeqData:
    """Pairs and their ids for one run. ``dropped`` counts pairs too long for ``context_length``."""

    train_pairs: list[tuple[str, str]]
    valid_pairs: list[tuple[str, str]]
    src_vocab: Any
    tgt_vocab: Any
    train_examples: list[Example]
    valid_examples: list[Example]
    context_length: int
    dropped: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.train_pairs, self.valid_pairs)


def load_pairs(cfg: Seq2SeqTrainConfig) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str]]:
    """(train pairs, validation pairs, problems with the pairs file) for ``cfg``, deterministic."""
    if cfg.task is not None:
        train = make_pairs(cfg.task, cfg.train_size, seed=cfg.seed, lengths=cfg.lengths)
        valid = make_pairs(cfg.task, cfg.valid_size, seed=cfg.seed + VALID_SEED_OFFSET, lengths=cfg.lengths,
                           exclude={s for s, _ in train})
        return train, valid, []
    pairs, problems = read_pairs_tsv(cfg.pairs, skip_bad_lines=cfg.skip_bad_lines)
    if len(pairs) < 2:
        raise ValueError(f"{cfg.pairs}: {len(pairs)} pair(s); need at least 2 (one to train, one to validate)")
    order = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(cfg.seed)).tolist()
    held_out = max(1, round(cfg.valid_fraction * len(pairs)))
    valid = [pairs[i] for i in order[:held_out]]
    train = [pairs[i] for i in order[held_out:]]
    return train, valid, problems


def build_vocabs(cfg: Seq2SeqTrainConfig, train_pairs: list[tuple[str, str]]):
    """(source vocab, target vocab): characters of each side, or one BPE for both sides."""
    if cfg.tokenize == "char":
        return CharVocab.from_texts(s for s, _ in train_pairs), CharVocab.from_texts(t for _, t in train_pairs)
    if cfg.tokenizer:
        vocab = load_bpe_vocab(cfg.tokenizer)
    else:
        vocab = train_bpe_vocab([text for pair in train_pairs for text in pair], cfg.bpe_vocab_size)
    return vocab, vocab


def prepare_data(cfg: Seq2SeqTrainConfig, vocabs=None) -> Seq2SeqData:
    """Pairs, vocabularies (``vocabs`` reuses saved ones, on resume), ids, and the length filter."""
    train_pairs, valid_pairs, problems = load_pairs(cfg)
    src_vocab, tgt_vocab = vocabs if vocabs is not None else build_vocabs(cfg, train_pairs)
    train_examples = encode_pairs(train_pairs, src_vocab, tgt_vocab)
    valid_examples = encode_pairs(valid_pairs, src_vocab, tgt_vocab)
    context_length = cfg.context_length
    if context_length is None:
        longest = max(max(len(s), len(t) + 1) for s, t in train_examples + valid_examples)
        context_length = longest + 8
    fit_train, long_train = split_by_length(train_examples, context_length)
    fit_valid, long_valid = split_by_length(valid_examples, context_length)
    if not fit_train or not fit_valid:
        raise ValueError(f"no {'training' if not fit_train else 'validation'} pair fits context_length="
                         f"{context_length} tokens; raise --context-length")
    return Seq2SeqData(
        train_pairs=[train_pairs[i] for i in fit_train], valid_pairs=[valid_pairs[i] for i in fit_valid],
        src_vocab=src_vocab, tgt_vocab=tgt_vocab,
        train_examples=[train_examples[i] for i in fit_train], valid_examples=[valid_examples[i] for i in fit_valid],
        context_length=context_length, dropped=len(long_train) + len(long_valid), problems=problems)


def fingerprint(train_pairs: list[tuple[str, str]], valid_pairs: list[tuple[str, str]]) -> str:
    """A short hash of the split pairs (order included): equal exactly when the data is."""
    digest = hashlib.sha256()
    for part in (train_pairs, valid_pairs):
        for source, target in part:
            digest.update(f"{source}\t{target}\n".encode())
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def unknown_characters(data: Seq2SeqData) -> list[tuple[str, str, str]]:
    """(side, text, characters) of each pair text holding characters its vocabulary lacks (they
    would become UNK); only character vocabularies can lack one (BPE covers every byte)."""
    found = []
    for pairs, examples in ((data.train_pairs, data.train_examples), (data.valid_pairs, data.valid_examples)):
        for (source, target), (src_ids, tgt_ids) in zip(pairs, examples):
            for side, text, ids in (("source", source, src_ids), ("target", target, tgt_ids)):
                if UNK_ID in ids:
                    missing = "".join(sorted({c for c, i in zip(text, ids) if i == UNK_ID}))
                    found.append((side, text, missing))
    return found
