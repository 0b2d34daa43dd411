"""Seq2seq data: reading sentence pairs from TSV, turning them into ids, and padded batches.

A batch of pairs becomes five tensors (teacher forcing)::

    pairs      ("ab", "xyz"), ("c", "w")
    src        [[a, b], [c, PAD]]                 src_mask [[T, T], [T, F]]
    tgt_in     [[BOS, x, y, z], [BOS, w, PAD, PAD]]   what the decoder reads
    tgt_out    [[x, y, z, EOS], [w, EOS, PAD, PAD]]   what it must predict (PAD positions ignored)
    tgt_mask   [[T, T, T, T], [T, T, F, F]]

Masks are bool with True = real token, the convention of every seq2seq model here.

:func:`collate` builds the three id matrices and the row lengths in ONE host buffer (page-locked
with ``pin_memory``), copies it to the device at once (``non_blocking``), and takes the five tensors
there: the id matrices as views of the copy, the masks from the lengths. One host-to-device copy
per batch instead of five, none of which makes the host wait when the buffer is pinned.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seqlab.seq2seq.builtin_tasks import make_pairs
from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.vocab import CharVocab, load_bpe_vocab, train_bpe_vocab

Example = tuple[list[int], list[int]]  # (source ids, target ids without BOS/EOS)
MAX_REPORTED_LINES = 10


class PairsFileError(ValueError):
    """A TSV pairs file has lines that cannot be used; ``problems`` lists ``"FILE:LINE: why"``."""

    def __init__(self, message: str, problems: list[str]):
        super().__init__(message)
        self.problems = problems


SKIP_FLAG = "--skip-bad-lines"  # the flag of `seqlab seq2seq train` that leaves bad lines out
BOM = "\ufeff"


def wide_encoding(head: bytes) -> str | None:
    """The encoding of a file whose first bytes show UTF-16 or UTF-32 text (which a UTF-8 reader
    would take apart line by line, with NUL bytes inside the "text"), else None::

        >>> wide_encoding("Go. Va !".encode("utf-16"))   # starts with the byte-order mark FF FE
        'UTF-16 (little-endian, byte-order mark FF FE)'
        >>> wide_encoding("Go. Va !".encode("utf-16-be"))  # no mark, but every other byte is 0
        'UTF-16 or UTF-32 (no byte-order mark; 8 of 16 bytes are 0)'
        >>> wide_encoding("Go. Va !".encode("utf-8")) is None
        True
    """
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32 (byte-order mark " + head[:4].hex(" ").upper() + ")"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        order = "little" if head[0] == 0xFF else "big"
        return f"UTF-16 ({order}-endian, byte-order mark {head[:2].hex(' ').upper()})"
    zeros = head.count(0)
    if head and zeros * 4 >= len(head):  # ASCII-range text in UTF-16 is half zeros, UTF-32 three quarters
        return f"UTF-16 or UTF-32 (no byte-order mark; {zeros} of {len(head)} bytes are 0)"
    return None


def first_occurrences(pairs: Sequence[tuple[str, str]]) -> tuple[list[int], list[tuple[int, int]]]:
    """(indices of each distinct pair's first occurrence, [(index of a repeat, index of its first)]).

        >>> first_occurrences([("a", "x"), ("b", "y"), ("a", "x"), ("a", "z")])
        ([0, 1, 3], [(2, 0)])
    """
    first: dict[tuple[str, str], int] = {}
    kept, repeats = [], []
    for index, pair in enumerate(pairs):
        if pair in first:
            repeats.append((index, first[pair]))
        else:
            first[pair] = index
            kept.append(index)
    return kept, repeats


def read_pairs_tsv(path: str | os.PathLike, *, skip_bad_lines: bool = False, drop_duplicates: bool = False,
                   skip_flag: str | None = SKIP_FLAG) -> tuple[list[tuple[str, str]], list[str]]:
    """(source, target) pairs from a file of ``source<TAB>target`` lines, and the problems found.

    This is the format of the Tatoeba / Anki exports (``Go.<TAB>Va !<TAB>CC-BY ...``): columns after
    the second are ignored, blank lines are skipped. A line that is not UTF-8, holds a NUL byte or a
    byte-order mark (U+FEFF) anywhere but at the very start of the file (two files joined with
    ``cat``), has no tab, or has an empty side is a problem, reported as ``FILE:LINE: why``; unless
    ``skip_bad_lines`` the first problems are raised as a :class:`PairsFileError` whose advice names
    ``skip_flag`` (the caller's flag for skipping; None when the command has none), otherwise those
    lines are dropped and the problems returned for the caller to show.

    A UTF-16 or UTF-32 file is refused as a whole, whatever ``skip_bad_lines`` says: read as UTF-8
    every line would be wrong, not a few.

    ``drop_duplicates``: keep only the first of identical pairs, and add one line saying how many
    were left out to the problems. A pair that appears twice can land in both training and
    validation, where exact match would then count a memorised pair as a translation.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"pairs file {path} does not exist or is not a file")
    pairs: list[tuple[str, str]] = []
    lines: list[int] = []  # the line number of each pair
    problems: list[str] = []
    with path.open("rb") as handle:
        encoding = wide_encoding(handle.read(4096))
        if encoding is not None:
            message = (f"{path} is {encoding} text, not UTF-8; every line would be misread, so no line can be "
                       f"skipped: convert it first, e.g. `iconv -f UTF-16 -t UTF-8 {path} > {path.stem}-utf8{path.suffix}`")
            raise PairsFileError(message, [message])
        handle.seek(0)
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                problems.append(f"{path}:{number}: not UTF-8 (byte {raw[error.start]:#04x} at column "
                                f"{error.start + 1}); re-save the file as UTF-8")
                continue
            line = line.rstrip("\r\n")
            if number == 1:
                line = line.removeprefix(BOM)  # a UTF-8 byte-order mark
            if "\x00" in line:
                problems.append(f"{path}:{number}: NUL byte at column {line.index(chr(0)) + 1} (binary data, or "
                                "UTF-16 text joined to this file?)")
                continue
            if BOM in line:
                problems.append(f"{path}:{number}: byte-order mark (U+FEFF) at column {line.index(BOM) + 1}, "
                                "inside the file: were two files joined (cat a.tsv b.tsv)? remove every one with "
                                f"sed -i 's/\\xef\\xbb\\xbf//g' {shlex.quote(str(path))}")
                continue
            if not line.strip():
                continue
            if "\t" not in line:
                problems.append(f"{path}:{number}: no tab between source and target: {line[:60]!r}")
                continue
            source, target = (part.strip() for part in line.split("\t")[:2])
            if not source or not target:
                side = "source" if not source else "target"
                problems.append(f"{path}:{number}: empty {side}: {line[:60]!r}")
                continue
            pairs.append((source, target))
            lines.append(number)
    if problems and not skip_bad_lines:
        shown = "\n  ".join(problems[:MAX_REPORTED_LINES])
        more = f"\n  ... and {len(problems) - MAX_REPORTED_LINES} more" if len(problems) > MAX_REPORTED_LINES else ""
        advice = f"fix them, or pass {skip_flag} to leave them out" if skip_flag else "fix them"
        raise PairsFileError(f"{path}: {len(problems)} bad line(s) (expected source<TAB>target per line):\n  "
                             f"{shown}{more}\n{advice}", problems)
    if not pairs and problems:  # skip_bad_lines: every line was bad, e.g. a Latin-1 file; say why
        shown = "\n  ".join(problems[:MAX_REPORTED_LINES])
        more = f"\n  ... and {len(problems) - MAX_REPORTED_LINES} more" if len(problems) > MAX_REPORTED_LINES else ""
        raise PairsFileError(f"{path} holds no usable source<TAB>target pairs: all {len(problems)} non-blank "
                             f"line(s) are bad, so skipping them leaves nothing:\n  {shown}{more}", problems)
    if not pairs:
        raise ValueError(f"{path} holds no source<TAB>target pairs")
    if drop_duplicates:
        kept, repeats = first_occurrences(pairs)
        if repeats:
            repeat, first = repeats[0]
            problems.append(f"{path}: {len(repeats)} duplicate pair(s), only the first of each kept (line "
                            f"{lines[repeat]} repeats line {lines[first]}): a pair in both training and "
                            "validation would make exact match count memorised pairs")
            pairs = [pairs[i] for i in kept]
    return pairs, problems


def encode_pairs(pairs: Sequence[tuple[str, str]], src_vocab, tgt_vocab) -> list[Example]:
    """Each pair as (source ids, target ids); BOS and EOS are added when batching."""
    return [(src_vocab.encode(s), tgt_vocab.encode(t)) for s, t in pairs]


def split_by_length(examples: Sequence[Example], max_seq_len: int) -> tuple[list[int], list[int]]:
    """Indices of examples that fit a model of ``max_seq_len`` positions (source, and target plus
    its BOS/EOS), and of those that do not (empty sources or targets never fit)."""
    fit, too_long = [], []
    for i, (src, tgt) in enumerate(examples):
        ok = 1 <= len(src) <= max_seq_len and 1 <= len(tgt) + 1 <= max_seq_len
        (fit if ok else too_long).append(i)
    return fit, too_long


def pad_sequences(sequences: Sequence[Sequence[int]], *, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad with PAD to the longest: ``(ids (B, L) long, mask (B, L) bool, True = real)``."""
    if not sequences:
        raise ValueError("pad_sequences: no sequences")
    width = max(1, max(len(s) for s in sequences))
    ids = torch.full((len(sequences), width), PAD_ID, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.as_tensor(list(seq), dtype=torch.long)
    mask = torch.arange(width).unsqueeze(0) < torch.tensor([len(s) for s in sequences]).unsqueeze(1)
    return ids.to(device), mask.to(device)


@dataclass
class Seq2SeqBatch:
    src: torch.Tensor       # (B, S) long
    src_mask: torch.Tensor  # (B, S) bool
    tgt_in: torch.Tensor    # (B, T) long: BOS + target
    tgt_out: torch.Tensor   # (B, T) long: target + EOS
    tgt_mask: torch.Tensor  # (B, T) bool
    target_tokens: int      # real target tokens (EOS included), counted on the host


def collate(examples: Sequence[Example], *, device=None, pin_memory: bool = False) -> Seq2SeqBatch:
    """Pad a list of examples into one :class:`Seq2SeqBatch` (see the module docstring), with one
    copy to ``device``: row i of the host buffer is ``src (S) | tgt_in (T) | tgt_out (T) | len(src),
    len(tgt_in)``. ``pin_memory``: build it in page-locked memory (for an asynchronous CUDA copy).

    Example: ("ab", "xyz"), ("c", "w") -> S = 2, T = 4, rows [a, b, BOS, x, y, z, x, y, z, EOS, 2, 4]
    and [c, PAD, BOS, w, PAD, PAD, w, EOS, PAD, PAD, 1, 2].
    """
    if not examples:
        raise ValueError("collate: no examples")
    src_lengths = np.array([len(e[0]) for e in examples], dtype=np.int64)
    tgt_lengths = np.array([len(e[1]) + 1 for e in examples], dtype=np.int64)  # + BOS (tgt_in), + EOS (tgt_out)
    S, T = max(1, int(src_lengths.max())), int(tgt_lengths.max())
    host = np.full((len(examples), S + 2 * T + 2), PAD_ID, dtype=np.int64)
    for row, (source, target) in enumerate(examples):
        n = len(target)
        host[row, :len(source)] = source
        host[row, S] = BOS_ID
        host[row, S + 1:S + 1 + n] = target
        host[row, S + T:S + T + n] = target
        host[row, S + T + n] = EOS_ID
    host[:, -2], host[:, -1] = src_lengths, tgt_lengths
    buffer = torch.from_numpy(host)
    if pin_memory:
        buffer = buffer.pin_memory()
    buffer = buffer.to(device, non_blocking=True) if device is not None else buffer
    columns = torch.arange(max(S, T), device=buffer.device)
    src_mask = columns[:S] < buffer[:, -2:-1]
    tgt_mask = columns[:T] < buffer[:, -1:]
    return Seq2SeqBatch(buffer[:, :S], src_mask, buffer[:, S:S + T], buffer[:, S + T:S + 2 * T], tgt_mask,
                        int(tgt_lengths.sum()))


def batches_in_order(examples: Sequence[Example], batch_size: int):
    """Consecutive slices ``(start, examples[start:start + batch_size])`` for evaluation."""
    for start in range(0, len(examples), batch_size):
        yield start, examples[start:start + batch_size]


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
    pairs, problems = read_pairs_tsv(cfg.pairs, skip_bad_lines=cfg.skip_bad_lines, drop_duplicates=True)
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
