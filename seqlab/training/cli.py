"""CLI: ``seqlab data tinystories``, ``seqlab prepare``, ``seqlab train``.

Only the standard library is imported here; torch/numpy load inside the handlers.
"""

from __future__ import annotations

import argparse
import os
import sys


def register(subparsers) -> None:
    _register_data(subparsers)
    _register_prepare(subparsers)
    _register_train(subparsers)


# -- seqlab data tinystories ------------------------------------------------------------------


def _register_data(subparsers) -> None:
    data = subparsers.add_parser("data", help="download training corpora")
    kinds = data.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    tiny = kinds.add_parser("tinystories", help="TinyStoriesV2-GPT4 train/valid text (about 2.2 GB)",
                            description="Download TinyStoriesV2-GPT4 (resumable; rerun to continue), "
                                        "or use local copies with --input.")
    tiny.add_argument("--out", required=True, help="directory for the text files")
    tiny.add_argument("--input", nargs="+", metavar="PATH",
                      help="use local files instead: a directory holding them, or TRAIN VALID")
    tiny.add_argument("--base-url", default=None, help="mirror to download from (default: Hugging Face)")
    tiny.add_argument("--split", choices=("train", "valid"), action="append",
                      help="download only this split (repeatable; default both)")
    tiny.add_argument("--no-progress", action="store_true", help="no progress bar")
    tiny.set_defaults(func=_run_data_tinystories)


def _run_data_tinystories(args: argparse.Namespace) -> int:
    from seqlab.training.download import TINYSTORIES_BASE_URL, DownloadError, download_tinystories, link_local_files

    try:
        if args.input:
            paths = link_local_files(args.input, args.out)
        else:
            splits = tuple(args.split or ("train", "valid"))
            paths = download_tinystories(args.out, base_url=args.base_url or TINYSTORIES_BASE_URL,
                                         splits=splits, progress=not args.no_progress)
    except (DownloadError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for split, path in paths.items():
        print(f"{split}: {path}")
    if {"train", "valid"} <= set(paths):
        # prepare replaces its --out directory whole, so it must not be the one holding the texts
        prepared = os.path.join(os.path.dirname(os.path.normpath(args.out)), "tinystories")
        if os.path.abspath(prepared) == os.path.abspath(args.out):
            prepared += "_tokens"
        print("next: seqlab prepare --train {} --valid {} --vocab-size 10000 --out {}".format(
            paths["train"], paths["valid"], prepared))
    return 0


# -- seqlab prepare ---------------------------------------------------------------------------


def _register_prepare(subparsers) -> None:
    prep = subparsers.add_parser(
        "prepare", help="train BPE on text and write token files for training",
        description="Train a BPE tokenizer on the train text (or take one with --tokenizer), encode both "
                    "splits and write DIR/tokenizer/, DIR/train.npy, DIR/valid.npy, DIR/meta.json.")
    prep.add_argument("--train", required=True, metavar="FILE", help="training text")
    prep.add_argument("--valid", required=True, metavar="FILE", help="validation text")
    vocabulary = prep.add_mutually_exclusive_group(required=True)
    vocabulary.add_argument("--vocab-size", type=int, metavar="N", help="train a BPE tokenizer of N ids")
    vocabulary.add_argument("--tokenizer", metavar="DIR",
                            help="encode with this tokenizer (a tokenizer directory or a run, e.g. one made by "
                                 "`seqlab import`, to fine-tune it) instead of training one")
    prep.add_argument("--out", required=True, metavar="DIR", help="new, empty, or a folder this command wrote")
    prep.add_argument("--overwrite", action="store_true", help="replace --out whole, whatever it holds")
    prep.add_argument("--special-token", action="append", metavar="T",
                      help="special token (repeatable; default <|endoftext|>)")
    prep.add_argument("--workers", type=int, default=None, help="processes for BPE and encoding")
    prep.add_argument("--no-progress", action="store_true")
    prep.set_defaults(func=_run_prepare)


def _run_prepare(args: argparse.Namespace) -> int:
    from seqlab.training.data import DEFAULT_SPECIAL_TOKENS, prepare

    if args.tokenizer is not None and args.special_token is not None:
        print(f"error: --special-token cannot be given with --tokenizer (the special tokens are those of "
              f"{args.tokenizer})", file=sys.stderr)
        return 1
    specials = args.special_token if args.special_token is not None else list(DEFAULT_SPECIAL_TOKENS)
    try:
        meta = prepare(args.train, args.valid, args.vocab_size, args.out, specials,
                       workers=args.workers, progress=not args.no_progress, tokenizer_dir=args.tokenizer,
                       overwrite=args.overwrite)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.tokenizer is not None:
        print(f"vocabulary {meta['vocab_size']} tokens ({meta['dtype']}) from {args.tokenizer}")
    else:
        print(f"vocabulary {meta['vocab_size']} tokens ({meta['dtype']}), BPE {meta['bpe_seconds']} s")
    if args.vocab_size is not None and meta["vocab_size"] < args.vocab_size:
        from seqlab.tokenizer.cli import stopped_short_message

        merges = meta["vocab_size"] - 256 - len(meta["special_tokens"])
        print(stopped_short_message(args.train, args.vocab_size, meta["vocab_size"], merges), file=sys.stderr)
    for split, info in meta["splits"].items():
        print(f"{split}: {info['tokens']:,} tokens, {info['bytes_per_token']} bytes/token")
    print(f"wrote {args.out}/ (tokenizer/, train.npy, valid.npy, meta.json)")
    return 0


# -- seqlab train -----------------------------------------------------------------------------


def _register_train(subparsers) -> None:
    from seqlab.training.config import add_config_arguments

    train = subparsers.add_parser(
        "train", help="train a Transformer LM on prepared data",
        description="Train (or --resume) a Transformer LM. Settings: defaults < --config TOML < flags "
                    "(with --resume, the run's config.json replaces the defaults). Several processes: "
                    "torchrun --nproc_per_node N -m seqlab train ... A run directory is locked while it trains; "
                    "--overwrite replaces the old run only at the new run's first checkpoint.")
    add_config_arguments(train)
    train.set_defaults(func=_run_train)


def _run_train(args: argparse.Namespace) -> int:
    from seqlab.training.config import config_from_args

    try:
        config = config_from_args(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from seqlab.training.trainer import NonFiniteLossError, train

    try:
        result = train(config)
    except NonFiniteLossError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (ValueError, OSError, RuntimeError, MemoryError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(train_summary(result))
    return result.exit_status


def train_summary(result) -> str:
    """The end-of-run line, e.g. "completed at step 40/40, train loss (mean of the last 10 steps) 2.31, ..."."""
    return result.summary()
