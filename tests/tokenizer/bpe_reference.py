"""Reference encoders for the tokenizer tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

from seqlab.tokenizer import GPT2_PATTERN

EOT = "<|endoftext|>"
FIXTURE_TEXTS = ("tinystories_sample.txt", "address.txt", "german.txt", "corpus.en")


def tiktoken_from_ranks(ranks: dict[bytes, int], special_tokens: dict[str, int], name: str):
    """A tiktoken Encoding with GPT-2's pattern over the given byte-string ranks (no download)."""
    import tiktoken

    return tiktoken.Encoding(name=name, pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=special_tokens)
