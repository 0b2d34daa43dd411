"""The fast pre-tokenizer equals GPT-2's regex; a whole-token pre-token is its own BPE result."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.tokenizer.bpe_apply import apply_merges
from seqlab.tokenizer.pretokenize import (
    GPT2_REGEX,
    gpt2_pretokenize,
    whitespace_pretokenize,
)

ASCII = st.text(st.characters(max_codepoint=127), max_size=300)
MIXED_PARTS = st.one_of(
    ASCII,
    st.sampled_from(["\n", "a\nb", "x\n\ny", " \n", "\u00a0", "\u2028", "\x85", "é", "日本語", "😀", "\x1c", "١٢٣"]),
)


@settings(max_examples=300, deadline=None)
@given(text=ASCII)
def test_ascii_fast_path_equals_gpt2_regex(text):
    assert gpt2_pretokenize(text) == GPT2_REGEX.findall(text)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(MIXED_PARTS, min_size=50, max_size=200))
def test_blockwise_mixed_text_equals_gpt2_regex(parts):
    text = "".join(parts) * 8  # long enough to be split into blocks
    assert gpt2_pretokenize(text) == GPT2_REGEX.findall(text)


def test_examples():
    assert gpt2_pretokenize("Hi  there, it's 2024!\n\n") == ["Hi", " ", " there", ",", " it", "'s", " 2024", "!", "\n\n"]
    assert whitespace_pretokenize(" low\tlower \n") == ["low", "lower"]


def test_every_gpt2_token_is_its_own_bpe(gpt2_tokenizer):
    """Justifies the whole-token shortcut in Tokenizer._encode_pretoken (tiktoken's too)."""
    tokenizer = gpt2_tokenizer
    special = set(tokenizer.special_token_ids.values())
    wrong = []
    for index, token in tokenizer.vocab.items():
        if index in special:
            continue
        ids = apply_merges([tokenizer._byte_ids[b] for b in token], tokenizer._merge_table)
        if ids != [index]:
            wrong.append(index)
    assert wrong == []


@pytest.mark.parametrize("vocab_size", [300, 700])
def test_every_trained_token_is_its_own_bpe(cs336_dir, vocab_size):
    from seqlab.tokenizer import Tokenizer, train_bpe

    vocab, merges = train_bpe(cs336_dir / "corpus.en", vocab_size, ["<|endoftext|>"])
    tokenizer = Tokenizer(vocab, merges, ["<|endoftext|>"])
    for index, token in vocab.items():
        if index != tokenizer.eot_id:
            assert apply_merges([tokenizer._byte_ids[b] for b in token], tokenizer._merge_table) == [index]
