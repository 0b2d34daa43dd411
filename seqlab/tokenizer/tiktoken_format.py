"""tiktoken's rank file: one ``base64(token bytes) rank`` line per ordinary token, ranks = ids.

tiktoken has no merge list: it merges, inside a pre-token, the adjacent pair whose concatenation
has the lowest rank. That is BPE with a merge list exactly when the tokens that merges make have
ids in merge order, which seqlab's trainer guarantees (specials, then the 256 bytes, then one id
per merge); :func:`tiktoken_ranks` checks it. The rank file holds neither the pattern nor the
special tokens, so they go beside it in ``tiktoken.json``. Worked example::

    write_tiktoken(tokenizer, "out/")     # out/tokenizer.tiktoken, out/tiktoken.json
    # "IQ== 33" is the line of b"!" when its id is 33

    import json, tiktoken, tiktoken.load
    info = json.load(open("out/tiktoken.json"))
    encoding = tiktoken.Encoding(name="mine", pat_str=info["pat_str"], special_tokens=info["special_tokens"],
                                 mergeable_ranks=tiktoken.load.load_tiktoken_bpe("out/tokenizer.tiktoken"))
    encoding.encode(text, allowed_special="all") == tokenizer.encode(text)
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from seqlab.atomic import atomic_write_text
from seqlab.tokenizer.tokenizer import Tokenizer

TIKTOKEN_FILES = ("tokenizer.tiktoken", "tiktoken.json")


def tiktoken_ranks(tokenizer: Tokenizer) -> dict[bytes, int]:
    """{token bytes: id} of the ordinary tokens, after checking that tiktoken's rule (lowest rank
    first) gives the same merges as the tokenizer's merge list; a ValueError names the first
    merge out of order."""
    special_ids = set(tokenizer.special_token_ids.values())
    ranks = {tokenizer.vocab[index]: index for index in sorted(tokenizer.vocab) if index not in special_ids}
    if len(ranks) != len(tokenizer.vocab) - len(special_ids):
        raise ValueError("two ordinary ids have the same bytes; tiktoken ranks need one id per token")
    highest_byte = max(ranks[bytes([byte])] for byte in range(256))
    previous = highest_byte
    for rank, (left, right) in enumerate(tokenizer.merges):
        made = ranks[left + right]
        if made <= previous:
            raise ValueError(
                f"merge {rank} ({left!r} + {right!r}) makes id {made}, not above the id {previous} made before it"
                f"{' (or a single byte)' if previous == highest_byte else ''}: tiktoken merges by id, so its ids "
                f"must follow the merge order")
        previous = made
    return ranks


def write_tiktoken(tokenizer: Tokenizer, directory: str | os.PathLike) -> None:
    """Write ``tokenizer.tiktoken`` (the rank file) and ``tiktoken.json`` (``pat_str``,
    ``special_tokens``) into the existing folder ``directory``, each atomically."""
    directory = Path(directory)
    ranks = tiktoken_ranks(tokenizer)
    lines = [f"{base64.b64encode(token).decode('ascii')} {rank}" for token, rank in
             sorted(ranks.items(), key=lambda item: item[1])]
    info = {"pat_str": tokenizer.pattern, "special_tokens": dict(tokenizer.special_token_ids)}
    atomic_write_text(directory / "tokenizer.tiktoken", "\n".join(lines) + "\n")
    atomic_write_text(directory / "tiktoken.json", json.dumps(info, indent=2, ensure_ascii=False) + "\n")
