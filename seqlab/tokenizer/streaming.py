"""Incremental detokenization for printing generated text as it is produced."""

from __future__ import annotations

import codecs
from collections.abc import Mapping


class StreamDecoder:
    """Feed token ids one at a time; get text as soon as it forms complete UTF-8 characters.

    A character split across tokens is held back until its last byte arrives, so a U+FFFD only
    appears for bytes that can never form a character (or for an unfinished tail at :meth:`finish`).
    """

    def __init__(self, vocab: Mapping[int, bytes]):
        self._vocab = vocab
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, token_id: int) -> str:
        """Add one id; return the text completed by it (possibly ``""``)."""
        try:
            token = self._vocab[token_id]
        except (KeyError, TypeError):
            raise KeyError(f"token id {token_id!r} is not in the vocabulary (size {len(self._vocab)})") from None
        return self._decoder.decode(token)

    def finish(self) -> str:
        """Flush: an incomplete trailing character becomes U+FFFD. The decoder can be reused after."""
        text = self._decoder.decode(b"", final=True)
        self._decoder.reset()
        return text
