"""Chunk boundaries are safe: pre-tokenizing chunk by chunk equals pre-tokenizing the whole file."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqlab.tokenizer.chunking import find_chunk_boundaries, read_chunk
from seqlab.tokenizer.pretokenize import (
    make_pretokenizer,
    special_tokens_regex,
    split_on_special_tokens,
)

SPECIALS = ["<|endoftext|>", "<|endoftext|><|endoftext|>", "<s>"]
PARTS = st.sampled_from(["a", "b", "\n", "\n\n", " ", "  ", "\t", "\r\n", "x\ny", "é", "日本", "'s", "!", "7"] + SPECIALS + ["<|endo", "ftext|>"])


def pieces(text: str, specials: list[str], pattern: str | None = None) -> list[tuple[str, bool]]:
    """(special token, True) and (pre-token of ``pattern``, default GPT-2's, False) in order."""
    pretokenize = make_pretokenizer(pattern)
    out = []
    for piece, is_special in split_on_special_tokens(text, special_tokens_regex(specials)):
        out.extend([(piece, True)] if is_special else [(t, False) for t in pretokenize(piece)])
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(PARTS, max_size=60), chunk_bytes=st.integers(1, 40), use_specials=st.booleans())
def test_chunked_pretokens_equal_whole_file(tmp_path, parts, chunk_bytes, use_specials):
    specials = SPECIALS if use_specials else []
    text = "".join(parts)
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    boundaries = find_chunk_boundaries(path, chunk_bytes, specials, max_scan=16)
    assert boundaries[0] == 0 and boundaries[-1] == len(text.encode("utf-8"))
    assert boundaries == sorted(set(boundaries))
    chunked = [p for a, b in zip(boundaries, boundaries[1:]) for p in pieces(read_chunk(path, a, b), specials)]
    assert chunked == pieces(text, specials)


def test_boundaries_prefer_special_tokens(tmp_path):
    doc = "line one\nline two\n" * 50
    path = tmp_path / "docs.txt"
    path.write_text("<|endoftext|>".join([doc] * 20))
    boundaries = find_chunk_boundaries(path, 2000, ["<|endoftext|>"])
    data = path.read_bytes()
    assert len(boundaries) > 5
    assert all(data[b : b + 13] == b"<|endoftext|>" for b in boundaries[1:-1])
    plain = find_chunk_boundaries(path, 2000, [])
    assert len(plain) > 5 and all(data[b : b + 1] == b"\n" for b in plain[1:-1])


def test_windows_line_endings_still_give_boundaries(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"some words here\r\nand more\r\n\r\nNext paragraph\r\n" * 200)
    boundaries = find_chunk_boundaries(path, 1000, [])
    assert len(boundaries) > 5
    data = path.read_bytes()
    whole = pieces(data.decode(), [])
    assert [p for a, b in zip(boundaries, boundaries[1:]) for p in pieces(data[a:b].decode(), [])] == whole
