"""Pathological inputs for BPE encoding: very long pre-tokens and a 1 MB line without spaces.

Quadratic merge loops take minutes here; seqlab's heap + linked-list loop should take seconds.
Compared with tiktoken (GPT-2 fixture vocabulary, no download) on the same inputs, same run;
ids must be identical. ``encode_iterable`` is also fed the 1 MB line in 4 KB pieces (its buffer
must not rescan the unfinished pre-token quadratically).

    python benchmarks/bpe_pathological.py
"""

from __future__ import annotations

import argparse
import os
import random
import string
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bpe_encode import gpt2_tiktoken  # noqa: E402
from brown_corpus import EOT, GPT2_DIR  # noqa: E402


def inputs() -> dict[str, str]:
    rng = random.Random(0)
    no_spaces = "".join(rng.choice(string.ascii_letters + string.digits + ".,;:-_/()") for _ in range(1_000_000))
    return {
        "'a' * 100,000 (one pre-token)": "a" * 100_000,
        "'x' * 1,000,000 (one 1 MB pre-token)": "x" * 1_000_000,
        "1 MB line of letters/digits/punctuation, no spaces": no_spaces,
        "'ab' * 500,000 (1 MB pre-token, two-byte period)": "ab" * 500_000,
    }


def timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    from seqlab.tokenizer import Tokenizer

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    tokenizer = Tokenizer.from_files(GPT2_DIR / "gpt2_vocab.json", GPT2_DIR / "gpt2_merges.txt", [EOT])
    encoding = gpt2_tiktoken()
    for name, text in inputs().items():
        reference, tiktoken_s = timed(encoding.encode, text)
        ids, seqlab_s = timed(tokenizer.encode, text)
        pieces = [text[i : i + 4096] for i in range(0, len(text), 4096)]
        streamed, stream_s = timed(lambda: list(tokenizer.encode_iterable(pieces)))
        same = ids == reference == streamed
        print(f"{name}: {len(reference)} tokens, identical ids: {'yes' if same else 'NO'}")
        print(f"  seqlab encode {seqlab_s:6.2f} s   encode_iterable (4 KB pieces) {stream_s:6.2f} s"
              f"   tiktoken {tiktoken_s:6.2f} s   ratio encode/tiktoken {seqlab_s / tiktoken_s:.1f}x")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
