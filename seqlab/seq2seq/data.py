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

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID

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


class BatchSampler:
    """Random training batches drawn with replacement by a seeded NumPy generator.

    ``state`` / ``load_state`` capture the generator, so a resumed run draws the batches the
    uninterrupted run would have drawn.
    """

    def __init__(self, examples: Sequence[Example], batch_size: int, *, seed: int):
        if not examples:
            raise ValueError("BatchSampler: no training examples")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.examples = list(examples)
        self.batch_size = batch_size
        self.generator = np.random.default_rng(seed)

    def next(self, *, device=None) -> Seq2SeqBatch:
        rows = self.generator.integers(0, len(self.examples), self.batch_size)
        return collate([self.examples[i] for i in rows], device=device)

    @property
    def state(self) -> dict:
        return self.generator.bit_generator.state

    def load_state(self, state: dict) -> None:
        self.generator.bit_generator.state = state


def batches_in_order(examples: Sequence[Example], batch_size: int):
    """Consecutive slices ``(start, examples[start:start + batch_size])`` for evaluation."""
    for start in range(0, len(examples), batch_size):
        yield start, examples[start:start + batch_size]
