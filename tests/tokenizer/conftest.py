"""Fixtures for the tokenizer tests: the GPT-2 fixture tokenizer and its reference encoders."""

from __future__ import annotations

import json

import pytest
from bpe_reference import EOT, tiktoken_from_ranks

from seqlab.tokenizer import Tokenizer
from seqlab.tokenizer.bytes_unicode import text_to_token


@pytest.fixture(scope="session")
def gpt2_tokenizer(cs336_dir) -> Tokenizer:
    return Tokenizer.from_files(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt", [EOT])


@pytest.fixture(scope="session")
def gpt2_tiktoken(cs336_dir):
    """The reference encoder, built from the same vocab.json (no download): ranks = GPT-2 ids."""
    table = json.loads((cs336_dir / "gpt2_vocab.json").read_text(encoding="utf-8"))
    ranks = {text_to_token(text): index for text, index in table.items() if text != EOT}
    return tiktoken_from_ranks(ranks, {EOT: table[EOT]}, "gpt2-fixture")
