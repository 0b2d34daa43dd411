"""Seq2seq vocabularies: text <-> ids, with PAD, BOS, EOS, UNK at ids 0..3.

:class:`CharVocab` has one id per training character (unknown ones become UNK, decoded ``"⁇"``);
:class:`BpeVocab` is seqlab's byte-level BPE for real sentences (a tokenizer trained by
:func:`train_bpe_vocab` puts the specials first; any other is shifted up by 4). Both have
``encode``, ``decode``, ``size``, ``to_dict``; :func:`vocab_from_dict` rebuilds either kind::

    >>> v = CharVocab.from_texts(["2026-11-29"])
    >>> v.chars                      # ids 4, 5, 6, ... in sorted order
    ['-', '0', '1', '2', '6', '9']
    >>> v.encode("2029")
    [7, 5, 7, 9]
    >>> v.decode([7, 5, 7, 9, 2])    # EOS (2) and other special ids are dropped
    '2029'
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from seqlab.seq2seq.config import BOS_ID, EOS_ID, NUM_SPECIAL_IDS, PAD_ID, UNK_ID

SPECIAL_TOKENS: tuple[str, ...] = ("<pad>", "<bos>", "<eos>", "<unk>")  # ids PAD_ID..UNK_ID
UNKNOWN_TEXT = "\u2047"  # "⁇", how UNK is shown in decoded text
assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3) and NUM_SPECIAL_IDS == len(SPECIAL_TOKENS)


class Vocab(Protocol):
    kind: str

    @property
    def size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Iterable[int]) -> str: ...

    def to_dict(self) -> dict: ...


class CharVocab:
    """One id per character; ids ``4 + index`` into the sorted character list."""

    kind = "char"

    def __init__(self, chars: Sequence[str]):
        chars = list(chars)
        bad = [c for c in chars if not isinstance(c, str) or len(c) != 1]
        if bad:
            raise ValueError(f"CharVocab: entries must be single characters, got {bad[:5]!r}")
        if len(set(chars)) != len(chars):
            raise ValueError("CharVocab: characters must be distinct")
        self.chars = chars
        self._ids = {c: NUM_SPECIAL_IDS + i for i, c in enumerate(chars)}

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> CharVocab:
        """The sorted set of characters appearing in ``texts``."""
        seen: set[str] = set()
        for text in texts:
            seen.update(text)
        return cls(sorted(seen))

    @property
    def size(self) -> int:
        return NUM_SPECIAL_IDS + len(self.chars)

    def encode(self, text: str) -> list[int]:
        return [self._ids.get(c, UNK_ID) for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        out = []
        for i in ids:
            i = int(i)
            if i == UNK_ID:
                out.append(UNKNOWN_TEXT)
            elif NUM_SPECIAL_IDS <= i < self.size:
                out.append(self.chars[i - NUM_SPECIAL_IDS])
        return "".join(out)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "chars": self.chars}


class BpeVocab:
    """A :class:`seqlab.tokenizer.Tokenizer` seen through seq2seq ids.

    When the tokenizer's first four ids are ``SPECIAL_TOKENS`` (as :func:`train_bpe_vocab` makes
    them) the ids are used as they are; otherwise every tokenizer id is shifted up by 4 to make
    room for PAD, BOS, EOS, UNK.
    """

    kind = "bpe"

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        own = {token: index for token, index in tokenizer.special_token_ids.items()}
        aligned = all(own.get(token) == index for index, token in enumerate(SPECIAL_TOKENS))
        self.offset = 0 if aligned else NUM_SPECIAL_IDS
        self._size = tokenizer.vocab_size + self.offset

    @property
    def size(self) -> int:
        return self._size

    def encode(self, text: str) -> list[int]:
        return [i + self.offset for i in self.tokenizer.encode(text)]

    def decode(self, ids: Iterable[int]) -> str:
        kept = [int(i) - self.offset for i in ids if NUM_SPECIAL_IDS <= int(i) < self._size]
        return self.tokenizer.decode(kept)

    def to_dict(self) -> dict:
        tok = self.tokenizer
        return {
            "kind": self.kind,
            "vocab": {str(i): token.hex() for i, token in sorted(tok.vocab.items())},
            "merges": [[a.hex(), b.hex()] for a, b in tok.merges],
            "special_tokens": list(tok.special_tokens),
        }


def vocab_from_dict(data: dict, *, source: str = "vocab.json") -> CharVocab | BpeVocab:
    """Rebuild a vocabulary written by ``to_dict``; ``source`` names the file in errors."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "char":
        return CharVocab(data["chars"])
    if kind == "bpe":
        from seqlab.tokenizer import Tokenizer

        vocab = {int(i): bytes.fromhex(h) for i, h in data["vocab"].items()}
        merges = [(bytes.fromhex(a), bytes.fromhex(b)) for a, b in data["merges"]]
        return BpeVocab(Tokenizer(vocab, merges, data.get("special_tokens", [])))
    raise ValueError(f"{source}: unknown vocabulary kind {kind!r} (expected 'char' or 'bpe'); "
                     "the file was not written by seqlab seq2seq train")


def train_bpe_vocab(texts: Iterable[str], vocab_size: int) -> BpeVocab:
    """Train byte-level BPE on ``texts`` (one per line) with the four special tokens first.

    ``vocab_size`` counts the specials and the 256 bytes, so it must be at least 260.
    """
    from seqlab.tokenizer import Tokenizer, train_bpe

    with tempfile.TemporaryDirectory(prefix="seqlab-bpe-") as folder:
        corpus = Path(folder) / "corpus.txt"
        corpus.write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n", encoding="utf-8")
        vocab, merges = train_bpe(corpus, vocab_size, list(SPECIAL_TOKENS), num_workers=1)
    return BpeVocab(Tokenizer(vocab, merges, list(SPECIAL_TOKENS)))


def load_bpe_vocab(directory: str | os.PathLike) -> BpeVocab:
    """A tokenizer directory written by ``seqlab bpe train`` or ``Tokenizer.save``."""
    from seqlab.tokenizer import Tokenizer

    return BpeVocab(Tokenizer.load(directory))
