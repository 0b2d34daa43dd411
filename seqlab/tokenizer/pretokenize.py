"""Pre-tokenization: split text on special tokens, then into pre-tokens (GPT-2 regex by default).

BPE merges never cross a pre-token boundary, so the trainer counts pre-tokens and the
tokenizer caches the ids of each distinct pre-token. A pre-tokenizer is any callable
``str -> list[str]`` (forked worker processes inherit it; elsewhere it must be picklable).
"""

from __future__ import annotations

from collections import Counter
import re
from collections.abc import Callable, Iterable, Iterator

import regex

# GPT-2's pattern: contractions, letters, numbers, other symbols, each optionally preceded by one
# space; whitespace runs keep their last space for the following word ("\s+(?!\S)").
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT2_REGEX = regex.compile(GPT2_PATTERN)

# The same pattern spelled out for pure-ASCII text, where \p{L} = [A-Za-z], \p{N} = [0-9] and
# \s = [\t\n\v\f\r ] (Unicode White_Space; not \x1c-\x1f). The standard library's `re` runs it
# about twice as fast as `regex` runs the Unicode pattern.
_WS = r"\t\n\x0b\x0c\r "
GPT2_ASCII_REGEX = re.compile(
    rf"""'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^{_WS}A-Za-z0-9]+|[{_WS}]+(?![^{_WS}])|[{_WS}]+"""
)
# A cut before a non-space ASCII whitespace character that is followed by a printable ASCII
# character never changes the pre-tokens (see chunking.py), so long texts are split there and
# each ASCII block takes the fast path.
_SAFE_CUT = re.compile(r"(?=[\t\n\x0b\x0c\r][!-~])")
_BLOCK_CHARS = 4096

PreTokenizer = Callable[[str], list[str]]


def gpt2_pretokenize(text: str) -> list[str]:
    """Split ``text`` into GPT-2 pre-tokens: ``"Hi  there"`` -> ``["Hi", " ", " there"]``.

    Same result as ``GPT2_REGEX.findall(text)``; ASCII stretches use the faster ASCII pattern.
    """
    if text.isascii():
        return GPT2_ASCII_REGEX.findall(text)
    if len(text) <= 2 * _BLOCK_CHARS:
        return GPT2_REGEX.findall(text)
    pretokens: list[str] = []
    start = 0
    while start < len(text):
        cut = _SAFE_CUT.search(text, start + _BLOCK_CHARS)
        end = cut.start() if cut else len(text)
        block = text[start:end]
        pretokens += GPT2_ASCII_REGEX.findall(block) if block.isascii() else GPT2_REGEX.findall(block)
        start = end
    return pretokens


def whitespace_pretokenize(text: str) -> list[str]:
    """Split on whitespace and drop it (the textbook example: ``"low lower"`` -> ``["low", "lower"]``)."""
    return text.split()


def special_tokens_regex(special_tokens: Iterable[str] | Iterable[bytes]) -> regex.Pattern | None:
    """A pattern matching any special token, longest first (so ``<a><a>`` beats ``<a>``).

    Tokens given as ``bytes`` (UTF-8) give a pattern for searching raw file bytes.
    """
    ordered = sorted(set(special_tokens), key=len, reverse=True)
    if not ordered:
        return None
    separator = b"|" if isinstance(ordered[0], bytes) else "|"
    return regex.compile(separator.join(regex.escape(token) for token in ordered))


def special_token_spans(text: str, pattern: regex.Pattern | None) -> Iterator[tuple[int, int, bool]]:
    """``(start, end, is_special)`` spans covering ``text`` in order, skipping empty text spans."""
    start = 0
    if pattern is not None:
        for match in pattern.finditer(text):
            if match.start() > start:
                yield start, match.start(), False
            yield match.start(), match.end(), True
            start = match.end()
    if start < len(text):
        yield start, len(text), False


def split_on_special_tokens(text: str, pattern: regex.Pattern | None) -> list[tuple[str, bool]]:
    """``text`` -> ``[(piece, is_special), ...]`` in order, dropping empty text pieces."""
    return [(text[start:end], is_special) for start, end, is_special in special_token_spans(text, pattern)]


def count_pretokens(
    text: str,
    special_pattern: regex.Pattern | None,
    pretokenize: PreTokenizer = gpt2_pretokenize,
) -> Counter[str]:
    """How often each pre-token occurs in ``text``; special tokens separate pieces and are not counted."""
    counts: Counter[str] = Counter()
    for piece, is_special in split_on_special_tokens(text, special_pattern):
        if not is_special:
            counts.update(pretokenize(piece))
    return counts
