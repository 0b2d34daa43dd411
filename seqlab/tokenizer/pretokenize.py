"""Pre-tokenization: split text on special tokens, then into pre-tokens (GPT-2 regex by default).

BPE merges never cross a pre-token boundary, so the trainer counts pre-tokens and the
tokenizer caches the ids of each distinct pre-token. A pre-tokenizer is any callable
``str -> list[str]`` (forked worker processes inherit it; elsewhere it must be picklable).

A tokenizer may use another pattern (:func:`make_pretokenizer`): Llama 3's, for one, keeps at most
three digits together and lets one punctuation character lead a word::

    make_pretokenizer(LLAMA3_PATTERN)("I'd pay 12345!")   # ["I", "'d", " pay", " ", "123", "45", "!"]
    gpt2_pretokenize("I'd pay 12345!")                    # ["I", "'d", " pay", " 12345", "!"]

Text may be cut (into file chunks, or a stream's committed prefix) only where the cut never
changes the pre-tokens; :func:`safe_cut_regex` knows such places for the GPT-2 and Llama 3
patterns (for any other pattern only special tokens are safe cuts).
"""

from __future__ import annotations

import re
from collections import Counter
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
_BLOCK_CHARS = 4096

# Llama 3's pattern (also OpenAI's cl100k): case-insensitive contractions, a letter run that one
# non-letter, non-digit character may lead, digits in groups of up to three, symbols with the
# line breaks after them, line-break runs with the whitespace before them, then GPT-2's
# whitespace rules.
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
                  r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")

# Places where cutting the text never changes its pre-tokens (see safe_cut_regex):
#   GPT-2: before an ASCII whitespace character other than a space that is followed by a printable
#     ASCII character (GPT-2's "\s+(?!\S)" gives a whitespace run's last character to the next
#     word only when it is a space, so "a\r\nb" is "a | \r | \n | b" cut or not);
#   Llama 3: between an ASCII letter and a line feed, or between a line feed and a printable ASCII
#     character. No alternative holds a letter and anything after it but letters, none holding a
#     line feed holds a letter, and the only ones that run on after a line feed take more
#     whitespace; a whitespace run that ends in a line feed is matched up to that line feed
#     ("\s*[\r\n]+") whatever follows. (Before a line feed that follows a space is not safe: " \n"
#     is one pre-token.)
SAFE_CUTS: dict[str, str] = {
    GPT2_PATTERN: r"(?=[\t\n\x0b\x0c\r][!-~])",
    LLAMA3_PATTERN: r"(?<=[A-Za-z])(?=\n)|(?<=\n)(?=[!-~])",
}
# gpt2_pretokenize splits long texts at GPT-2's safe cuts, so each ASCII block takes the fast path
_SAFE_CUT = re.compile(SAFE_CUTS[GPT2_PATTERN])

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


class RegexPreTokenizer:
    """Pre-tokens of any pattern: its matches and the text between them, in order (Hugging Face's
    "Isolated" split; for patterns that match every character, such as GPT-2's and Llama 3's,
    the same as ``findall``). Picklable, so worker processes can receive it.

    ``RegexPreTokenizer(r"\\d")("ab12")`` -> ``["ab", "1", "2"]``.
    """

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._regex = regex.compile(pattern)

    def __call__(self, text: str) -> list[str]:
        pieces: list[str] = []
        start = 0
        for match in self._regex.finditer(text):
            if match.start() > start:
                pieces.append(text[start:match.start()])
            if match.end() > match.start():
                pieces.append(match.group())
            start = match.end()
        if start < len(text):
            pieces.append(text[start:])
        return pieces

    def __reduce__(self):
        return RegexPreTokenizer, (self.pattern,)

    def __repr__(self) -> str:
        return f"RegexPreTokenizer({self.pattern!r})"


def make_pretokenizer(pattern: str | None) -> PreTokenizer:
    """The pre-tokenizer of ``pattern``: GPT-2's fast :func:`gpt2_pretokenize` for None or
    :data:`GPT2_PATTERN`, else a :class:`RegexPreTokenizer` (an invalid pattern raises ValueError)."""
    if pattern is None or pattern == GPT2_PATTERN:
        return gpt2_pretokenize
    try:
        return RegexPreTokenizer(pattern)
    except regex.error as error:
        raise ValueError(f"pre-tokenizer pattern {pattern!r} is not a valid regular expression: {error}") from None


def safe_cut_regex(pattern: str | None, *, as_bytes: bool = False) -> regex.Pattern | None:
    """A regex whose (empty) matches are positions where text may be cut without changing its
    pre-tokens under ``pattern`` (None = GPT-2), or None when no such place is known.

    ``as_bytes=True`` gives the same positions in UTF-8 bytes (the cuts are ASCII-only, so a
    byte position found is never inside a character).
    """
    cut = SAFE_CUTS.get(GPT2_PATTERN if pattern is None else pattern)
    if cut is None:
        return None
    return regex.compile(cut.encode("ascii") if as_bytes else cut)


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
