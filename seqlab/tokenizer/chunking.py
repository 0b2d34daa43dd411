"""Split a file into byte ranges that can be pre-tokenized independently.

A boundary is safe when pre-tokenizing the two sides separately gives exactly the pre-tokens of
the whole text, so results never depend on the chunking:
  - the start of a special token occurrence (text is split on special tokens first), or
  - a place where the pre-tokenizer's pattern never joins the two sides
    (:func:`seqlab.tokenizer.pretokenize.safe_cut_regex`). For GPT-2's pattern that is just before
    an ASCII whitespace character other than a space (``\\n``, ``\\r``, ``\\t``...) followed by a
    printable ASCII character: GPT-2's ``\\s+(?!\\S)`` splits a whitespace run in front of a word
    as ``run[:-1] | run[-1]``, and ``run[-1]`` joins the word only when it is a space, so
    ``a\\r\\nb`` is ``a | \\r | \\n | b`` whether or not it is cut before the ``\\n``. For Llama 3's
    it is between an ASCII letter and a line feed, or after a line feed before a printable ASCII
    character. A pattern with no known safe place is cut
    only at special tokens.
Special-token starts are preferred; the pattern's places are used only when no special token
occurs within ``max_scan`` bytes. Either way the boundary must not fall inside a special token
occurrence.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import regex

from seqlab.tokenizer.pretokenize import safe_cut_regex, special_tokens_regex

_BLOCK = 1 << 16


def _covered_by_special(handle, position: int, pattern: regex.Pattern | None, longest: int) -> bool:
    """True if some special token occurrence starts before ``position`` and ends after it."""
    if pattern is None or longest <= 1:
        return False
    start = max(0, position - longest + 1)
    handle.seek(start)
    window = handle.read(position - start + longest)
    for match in pattern.finditer(window, overlapped=True):
        if start + match.start() < position < start + match.end():
            return True
    return False


def _next_boundary(handle, desired: int, size: int, pattern, longest: int, max_scan: int,
                   cuts: regex.Pattern | None) -> int:
    """The first safe boundary at or after ``desired`` (``size`` if there is none); ``cuts``
    matches the pre-tokenizer's safe places (None: only special tokens are safe)."""
    overlap = max(longest, 2)  # so matches and the one-byte look-arounds straddling blocks are seen
    fallback: int | None = None
    position = desired
    while position < size:
        block_start = max(0, position - overlap)
        handle.seek(block_start)
        block = handle.read(_BLOCK + 2 * overlap)
        if pattern is not None:
            starts = sorted({block_start + m.start() for m in pattern.finditer(block, overlapped=True)})
            for candidate in starts:
                if desired <= candidate < size and not _covered_by_special(handle, candidate, pattern, longest):
                    return candidate
        if fallback is None and cuts is not None:
            for match in cuts.finditer(block):
                candidate = block_start + match.start()
                if desired <= candidate < size and not _covered_by_special(handle, candidate, pattern, longest):
                    fallback = candidate
                    break
        position += _BLOCK
        if fallback is not None and (pattern is None or position - desired >= max_scan):
            return fallback
    return fallback if fallback is not None else size


def find_chunk_boundaries(
    path: str | os.PathLike,
    chunk_bytes: int,
    special_tokens: Sequence[str] = (),
    *,
    max_scan: int = 1 << 22,
    pattern: str | None = None,
) -> list[int]:
    """Byte offsets ``[0, ..., file_size]``; consecutive offsets delimit chunks of about ``chunk_bytes``.

    Every inner offset is a safe boundary (see the module docstring) for pre-tokenizing with
    ``pattern`` (None: GPT-2's), so chunks can be decoded as UTF-8 and pre-tokenized independently
    with the same result as the whole file.
    """
    if chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
    size = os.path.getsize(path)
    cuts = safe_cut_regex(pattern, as_bytes=True)
    specials = special_tokens_regex(token.encode("utf-8") for token in special_tokens)
    longest = max((len(token.encode("utf-8")) for token in special_tokens), default=0)
    boundaries = [0]
    with open(path, "rb") as handle:
        while boundaries[-1] < size:
            desired = boundaries[-1] + chunk_bytes
            if desired >= size:
                boundaries.append(size)
                break
            nxt = _next_boundary(handle, desired, size, specials, longest, max_scan, cuts)
            boundaries.append(nxt)
    return boundaries


def read_chunk(path: str | os.PathLike, start: int, end: int) -> str:
    """Decode the bytes ``[start, end)`` of ``path`` as UTF-8 (errors name the file and offset)."""
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: invalid UTF-8 at byte offset {start + error.start}: {error.reason}") from None
