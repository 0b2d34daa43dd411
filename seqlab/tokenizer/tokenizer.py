"""The byte-level BPE tokenizer: text <-> ids, GPT-2 files, streaming and parallel encoding."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path

import numpy as np

from seqlab.tokenizer import parallel
from seqlab.tokenizer.bpe_apply import MergeTable, apply_merges, build_merge_table
from seqlab.tokenizer.files import (
    PRE_TOKENIZER_FILE,
    check_files_agree,
    read_merges_txt,
    read_pre_tokenizer_json,
    read_special_tokens_json,
    read_vocab_json,
    write_tokenizer_dir,
)
from seqlab.tokenizer.pretokenize import (
    GPT2_PATTERN,
    gpt2_pretokenize,
    make_pretokenizer,
    safe_cut_regex,
    special_token_spans,
    special_tokens_regex,
)
from seqlab.tokenizer.streaming import StreamDecoder
from seqlab.tokenizer.token_array import token_dtype

EOT = "<|endoftext|>"
# the end-of-text marker under the names tokenizers give it: GPT-2 (and SmolLM), then Llama 3
END_OF_TEXT_NAMES = (EOT, "<|end_of_text|>")
_CACHE_MAX_ENTRIES = 1 << 20  # distinct pre-tokens kept; bounds memory on huge corpora
_CACHE_MAX_CHARS = 64  # longer pre-tokens are rare; caching them would only cost memory
_STREAM_BUFFER_CHARS = 1 << 16


class _PretokenCache(dict):
    """pre-token -> tuple of ids; a miss runs BPE (``__missing__`` keeps hits on the C fast path)."""

    def __init__(self, encode_pretoken):
        super().__init__()
        self.encode_pretoken = encode_pretoken

    def __missing__(self, pretoken: str) -> tuple[int, ...]:
        ids = self.encode_pretoken(pretoken)
        if len(pretoken) <= _CACHE_MAX_CHARS:
            if len(self) >= _CACHE_MAX_ENTRIES:
                self.clear()
            self[pretoken] = ids
        return ids


class Tokenizer:
    """Byte-level BPE tokenizer.

    ``vocab`` maps id -> token bytes (it must contain all 256 single bytes), ``merges`` lists
    ``(left, right)`` byte pairs in rank order, ``special_tokens`` are strings that are never
    split (added to the vocabulary if missing; overlapping ones match longest first).
    ``pattern`` is the pre-tokenizer's regex (None: GPT-2's; e.g.
    :data:`~seqlab.tokenizer.pretokenize.LLAMA3_PATTERN` for a Llama 3 tokenizer read with
    :func:`seqlab.tokenizer.read_tokenizer_json`); text between special tokens is cut into its matches before BPE.
    """

    def __init__(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens: Sequence[str] | None = None,
        *,
        pattern: str | None = None,
    ):
        self.pattern: str = GPT2_PATTERN if pattern is None else pattern
        self._pretokenize = make_pretokenizer(self.pattern)
        self._safe_cuts = safe_cut_regex(self.pattern)  # where a stream may be cut (other patterns than GPT-2's)
        self.vocab: dict[int, bytes] = dict(vocab)
        self.merges: list[tuple[bytes, bytes]] = [(bytes(a), bytes(b)) for a, b in merges]
        self.special_tokens: list[str] = list(dict.fromkeys(special_tokens or ()))
        if any(not isinstance(token, str) or not token for token in self.special_tokens):
            raise ValueError(f"special tokens must be non-empty strings, got {self.special_tokens}")
        self.special_token_ids: dict[str, int] = {}
        first_id: dict[bytes, int] = {}
        for index, value in self.vocab.items():
            first_id.setdefault(value, index)
        for token in self.special_tokens:
            self.special_token_ids[token] = self._id_of_special(token, first_id)
        special_ids = set(self.special_token_ids.values())
        self._id_of_bytes: dict[bytes, int] = {}
        for index in sorted(self.vocab):
            if index not in special_ids:
                self._id_of_bytes.setdefault(self.vocab[index], index)
        missing = [byte for byte in range(256) if bytes([byte]) not in self._id_of_bytes]
        if missing:
            raise ValueError(f"the vocabulary lacks single-byte tokens for bytes {missing[:10]} (byte-level BPE needs all 256)")
        self._byte_ids = [self._id_of_bytes[bytes([byte])] for byte in range(256)]
        self._merge_table = self._build_merge_table()
        self._special_regex = special_tokens_regex(self.special_tokens)
        self._cache = _PretokenCache(self._encode_pretoken)

    # ----------------------------------------------------------------- construction
    def _id_of_special(self, token: str, first_id: dict[bytes, int]) -> int:
        """The id of ``token`` (the first id with its bytes), or a new id after the last one."""
        encoded = token.encode("utf-8")
        if encoded in first_id:
            return first_id[encoded]
        index = max(self.vocab, default=-1) + 1
        self.vocab[index] = first_id[encoded] = encoded
        return index

    def _build_merge_table(self) -> MergeTable:
        triples = []
        for rank, (left, right) in enumerate(self.merges):
            ids = []
            for part in (left, right, left + right):
                index = self._id_of_bytes.get(part)
                if index is None:
                    raise ValueError(f"merge {rank} ({left!r}, {right!r}): token {part!r} is not in the vocabulary")
                ids.append(index)
            triples.append(tuple(ids))
        return build_merge_table(triples)

    @classmethod
    def from_files(
        cls,
        vocab_path: str | os.PathLike,
        merges_path: str | os.PathLike,
        special_tokens: Sequence[str] | None = None,
        *,
        pattern: str | None = None,
    ) -> Tokenizer:
        """Load GPT-2 format files (``vocab.json`` + ``merges.txt``); ``pattern`` as in the constructor."""
        vocab = read_vocab_json(vocab_path, special_tokens or ())
        merges = read_merges_txt(merges_path)
        check_files_agree(vocab, merges, special_tokens or (), vocab_path, merges_path)
        return cls(vocab, merges, special_tokens, pattern=pattern)

    def save(self, directory: str | os.PathLike) -> None:
        """Write ``vocab.json``, ``merges.txt`` (GPT-2 format) and ``special_tokens.json`` to ``directory``
        (and ``pre_tokenizer.json`` when the pattern is not GPT-2's), as a unit: a failure leaves an
        existing directory as it was (see ``files.write_tokenizer_dir``)."""
        write_tokenizer_dir(directory, self.vocab, self.merges, self.special_tokens,
                            pattern=None if self.pattern == GPT2_PATTERN else self.pattern)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> Tokenizer:
        """Read a directory written by :meth:`save`."""
        directory = Path(directory)
        if not directory.is_dir():
            raise FileNotFoundError(f"tokenizer directory {str(directory)!r} does not exist")
        specials_path = directory / "special_tokens.json"
        specials = read_special_tokens_json(specials_path) if specials_path.is_file() else []
        pattern_path = directory / PRE_TOKENIZER_FILE
        pattern = read_pre_tokenizer_json(pattern_path) if pattern_path.is_file() else None
        return cls.from_files(directory / "vocab.json", directory / "merges.txt", specials, pattern=pattern)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_cache"]  # rebuilt lazily in each process
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._cache = _PretokenCache(self._encode_pretoken)

    # ----------------------------------------------------------------- properties
    @property
    def vocab_size(self) -> int:
        """Number of ids (embedding rows needed): ``max id + 1``."""
        return max(self.vocab) + 1

    @property
    def eot_id(self) -> int | None:
        """Id of the end-of-text special token: ``<|endoftext|>`` (GPT-2), else ``<|end_of_text|>``
        (Llama 3, e.g. a model brought in with ``seqlab import --from hf``); None without either."""
        for name in END_OF_TEXT_NAMES:
            if name in self.special_token_ids:
                return self.special_token_ids[name]
        return None

    # ----------------------------------------------------------------- encoding
    def _encode_pretoken(self, pretoken: str) -> tuple[int, ...]:
        encoded = pretoken.encode("utf-8")
        # Like tiktoken: a pre-token that is a whole token encodes as that token. Merging by rank
        # gives the same answer for every token BPE training creates (tested on GPT-2's 50k).
        whole = self._id_of_bytes.get(encoded)
        if whole is not None:
            return (whole,)
        byte_ids = self._byte_ids
        return tuple(apply_merges([byte_ids[byte] for byte in encoded], self._merge_table))

    def _encode_pretokens(self, pretokens: list[str], out: list[int]) -> None:
        """Append the ids of each pre-token to ``out`` (cache hits stay on the C fast path)."""
        out.extend(chain.from_iterable(map(self._cache.__getitem__, pretokens)))

    def _encode_ordinary(self, text: str, out: list[int]) -> None:
        """Encode text containing no special tokens, appending ids to ``out``."""
        self._encode_pretokens(self._pretokenize(text), out)

    def encode(self, text: str) -> list[int]:
        """Text -> ids. Special tokens become their ids; the text between them is BPE-encoded."""
        out: list[int] = []
        if self._special_regex is None:
            self._encode_ordinary(text, out)
            return out
        for start, end, is_special in special_token_spans(text, self._special_regex):
            if is_special:
                out.append(self.special_token_ids[text[start:end]])
            else:
                self._encode_ordinary(text[start:end], out)
        return out

    def _pending_special_start(self, text: str) -> int:
        """Earliest position whose suffix is a proper prefix of a special token (``len(text)`` if none)."""
        longest = max((len(token) for token in self.special_tokens), default=0)
        for size in range(min(longest - 1, len(text)), 0, -1):
            tail = text[-size:]
            if any(len(token) > size and token.startswith(tail) for token in self.special_tokens):
                return len(text) - size
        return len(text)

    def _encode_stable_prefix(self, text: str, out: list[int]) -> int:
        """Encode the longest prefix of ``text`` whose ids cannot change when more text follows.

        Appends those ids to ``out`` and returns the prefix length. Held back: a possible special
        token cut by the end (or one that could grow into a longer one) and the last pre-token,
        which more text could extend, together with a lone ``'`` before it (``'`` + ``l`` becomes
        ``'ll`` when an ``l`` follows). Earlier pre-tokens never depend on what follows.

        With another pattern the prefix ends at the last place where the pattern is known never
        to join text across (:func:`~seqlab.tokenizer.pretokenize.safe_cut_regex`) or at the end
        of the last special token before the pending region.
        """
        if self.pattern != GPT2_PATTERN:
            return self._encode_to_last_safe_cut(text, out)
        pending = self._pending_special_start(text)
        for start, end, is_special in special_token_spans(text, self._special_regex):
            if end <= pending and is_special:
                out.append(self.special_token_ids[text[start:end]])
                continue
            if start >= pending or is_special:  # a special token overlapping the pending region
                return start
            stop = min(end, pending)
            pretokens = gpt2_pretokenize(text[start:stop])
            if end >= pending:
                # the text span that more input could extend: keep its last pre-token for later
                if not pretokens:
                    return start
                held = len(pretokens.pop())
                if pretokens and pretokens[-1] == "'":
                    # "'" then "l" can still become the contraction "'ll" (likewise "'ve", "'re")
                    held += len(pretokens.pop())
                self._encode_pretokens(pretokens, out)
                return stop - held
            self._encode_pretokens(pretokens, out)
        return len(text)

    def _encode_to_last_safe_cut(self, text: str, out: list[int]) -> int:
        """:meth:`_encode_stable_prefix` for a pattern other than GPT-2's."""
        pending = self._pending_special_start(text)
        spans = list(special_token_spans(text, self._special_regex))
        inside_special = [(start, end) for start, end, is_special in spans if is_special]
        cut = max((end for start, end in inside_special if end <= pending), default=0)
        if self._safe_cuts is not None:
            for match in reversed(list(self._safe_cuts.finditer(text, cut, pending))):
                position = match.start()
                if not any(start < position < end for start, end in inside_special):
                    cut = position
                    break
        if cut:
            out.extend(self.encode(text[:cut]))
        return cut

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily encode a stream of strings (e.g. a file's lines); equals ``encode("".join(iterable))``.

        Memory stays bounded by the buffer (about 64K characters, or the longest pre-token) and
        the pre-token cache, whatever the stream's length.
        """
        pieces: list[str] = []
        buffered = 0
        threshold = _STREAM_BUFFER_CHARS
        for piece in iterable:
            pieces.append(piece)
            buffered += len(piece)
            if buffered < threshold:
                continue
            text = "".join(pieces)
            ids: list[int] = []
            consumed = self._encode_stable_prefix(text, ids)
            yield from ids
            rest = text[consumed:]
            pieces, buffered = [rest], len(rest)
            # a long unfinished pre-token is rescanned only after the buffer doubles: linear time
            threshold = max(_STREAM_BUFFER_CHARS, 2 * len(rest))
        yield from self.encode("".join(pieces))

    def encode_file(self, path: str | os.PathLike, workers: int | None = None, *, progress: bool = False):
        """Encode a UTF-8 file in parallel chunks; see :func:`seqlab.tokenizer.parallel.encode_file`."""
        return parallel.encode_file(self, path, workers, progress=progress)

    def id_dtype(self) -> np.dtype:
        """Smallest unsigned numpy dtype holding every id (:func:`seqlab.tokenizer.token_array.token_dtype`)."""
        return token_dtype(self.vocab_size)

    def iter_encode_file(self, path: str | os.PathLike, workers: int | None = None, *, progress: bool = False,
                         chunk_bytes: int = parallel.FILE_CHUNK_BYTES) -> Iterator:
        """Ids of ``path`` chunk by chunk; see :func:`seqlab.tokenizer.parallel.iter_encode_file`."""
        return parallel.iter_encode_file(self, path, workers, progress=progress, chunk_bytes=chunk_bytes)

    # ----------------------------------------------------------------- decoding
    def _token(self, index) -> bytes:
        try:
            return self.vocab[index]
        except (KeyError, TypeError):
            raise KeyError(f"token id {index!r} is not in the vocabulary (ids 0..{self.vocab_size - 1})") from None

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """Ids -> the concatenated token bytes; an unknown id raises ``KeyError`` naming it."""
        ids = list(ids)
        try:
            return b"".join(map(self.vocab.__getitem__, ids))
        except (KeyError, TypeError):
            return b"".join(map(self._token, ids))  # re-run to name the offending id

    def decode(self, ids: Iterable[int]) -> str:
        """Ids -> text; bytes that are not valid UTF-8 become U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def stream_decoder(self) -> StreamDecoder:
        """A :class:`StreamDecoder` for printing ids as text while they are generated."""
        return StreamDecoder(self.vocab)
