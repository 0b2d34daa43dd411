"""CLI of the language model: ``seqlab data tinystories``, ``prepare``, ``train``, ``generate``, ``eval``.

Only the standard library is imported here; torch/numpy load inside the handlers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

from seqlab.cli_types import check_text, file_given_as_folder, finite_float, non_negative_int, positive_int


def register(subparsers) -> None:
    _register_data(subparsers)
    _register_prepare(subparsers)
    _register_train(subparsers)
    _register_generate(subparsers)
    _register_eval(subparsers)


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
    from seqlab.lm.download import (
        TINYSTORIES_BASE_URL,
        DownloadError,
        download_tinystories,
        link_local_files,
    )

    if args.input and len(args.input) == 1 and not os.path.exists(args.input[0]):
        print(f"error: --input {args.input[0]} does not exist", file=sys.stderr)
        return 1
    try:
        if args.input:
            paths = link_local_files(args.input, args.out)
        else:
            splits = tuple(args.split or ("train", "valid"))
            paths = download_tinystories(args.out, base_url=args.base_url or TINYSTORIES_BASE_URL,
                                         splits=splits, progress=not args.no_progress)
    except (DownloadError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2 if isinstance(error, ValueError) else 1  # ValueError: --input is neither a folder nor TRAIN VALID
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
    from seqlab.lm.data import DEFAULT_SPECIAL_TOKENS, prepare

    if args.tokenizer is not None and args.special_token is not None:
        print(f"error: --special-token cannot be given with --tokenizer (the special tokens are those of "
              f"{args.tokenizer})", file=sys.stderr)
        return 2
    if file_given_as_folder(args.out, "--out"):
        return 2
    specials = args.special_token if args.special_token is not None else list(DEFAULT_SPECIAL_TOKENS)
    if args.tokenizer is None:  # flags that cannot make a tokenizer are refused as such (2), as by `bpe train`
        from seqlab.tokenizer.files import check_special_tokens
        from seqlab.tokenizer.trainer import _check_vocab_size

        try:
            check_special_tokens(specials)
            _check_vocab_size(args.vocab_size, specials)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
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
    from seqlab.lm.settings import add_config_arguments

    train = subparsers.add_parser(
        "train", help="train a Transformer LM on prepared data",
        description="Train (or --resume) a Transformer LM. Settings: defaults < --config TOML < flags "
                    "(with --resume, the run's config.json replaces the defaults). Several processes: "
                    "torchrun --nproc_per_node N -m seqlab train ... A run directory is locked while it trains; "
                    "--overwrite replaces the old run only at the new run's first checkpoint.")
    add_config_arguments(train)
    train.set_defaults(func=_run_train)


def _run_train(args: argparse.Namespace) -> int:
    from seqlab.lm.settings import TrainConfig
    from seqlab.settings import resolve_settings

    try:
        config, notes = resolve_settings(TrainConfig, args)
    except (ValueError, FileNotFoundError) as error:  # a missing --config file or run fails (1)
        print(f"error: {error}", file=sys.stderr)
        return 1 if isinstance(error, FileNotFoundError) else 2
    for note in notes:  # e.g. a run written by an older seqlab
        print(f"note: {note}", file=sys.stderr)
    from seqlab.lm.task import train
    from seqlab.training.guards import NonFiniteLossError

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



# errors a handler reports as one line (exit 2) instead of a traceback
USER_ERRORS = (ValueError, FileNotFoundError, IsADirectoryError, PermissionError, KeyError, RuntimeError)
# exit statuses: 2 when the command line is wrong (a flag's value, the wrong kind of run for the
# command, a folder given as a checkpoint), 1 when the command fails on what it reads or runs
USAGE, FAILURE = 2, 1


def _usage_checks(args: argparse.Namespace, command: str) -> None:
    """What can be refused from the command line alone, before a file is read."""
    from seqlab.runs.kinds import check_kind

    check_kind(args.run or args.checkpoint, "lm", command, run_dir=args.run is not None)
    from seqlab.runtime import resolve_device

    resolve_device(args.device)  # a device this machine lacks


def _usage_status(error: BaseException) -> int:
    """A run that does not exist (or cannot be read) fails (1); anything else refused up front is the
    command line's fault (2)."""
    return FAILURE if isinstance(error, (FileNotFoundError, PermissionError)) else USAGE


def _add_model_source(parser: argparse.ArgumentParser) -> None:
    """--run DIR | --checkpoint PATH and --device, shared by `seqlab generate` and `seqlab eval`."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", metavar="DIR", help="run directory (uses checkpoints/latest.pt)")
    source.add_argument("--checkpoint", metavar="PATH", help="a checkpoint file")
    parser.add_argument("--device", default="auto", help="torch device: auto (cuda, else mps, else cpu), cpu, cuda, "
                        "cuda:N or mps (default: auto)")


# -- seqlab generate ----------------------------------------------------------------------------


def _register_generate(subparsers: Any) -> None:
    p = subparsers.add_parser("generate", help="sample text from a trained model",
                              description="Sample a continuation of --prompt, streamed as it is produced.")
    _add_model_source(p)
    p.add_argument("--tokenizer", metavar="DIR", help="tokenizer directory (default: RUN/tokenizer)")
    p.add_argument("--prompt", default="", help="text to continue (default: start of a document)")
    p.add_argument("--max-tokens", type=int, default=256, help="new tokens at most (256)")
    p.add_argument("--temperature", type=finite_float, default=1.0, help="0 = greedy (default 1.0)")
    p.add_argument("--top-p", type=finite_float, default=1.0, help="nucleus mass (default 1.0 = off)")
    p.add_argument("--top-k", type=int, default=0, help="keep the k most likely tokens (default 0 = off)")
    p.add_argument("--seed", type=non_negative_int, default=None, help="seed for reproducible sampling")
    p.add_argument("--compile", action="store_true",
                   help="decode through a preallocated KV cache with the one-token step compiled once (on CUDA "
                        "a CUDA graph, one launch per token); the first token waits for the compilation")
    p.set_defaults(func=_run_generate)


def _run_generate(args: argparse.Namespace) -> int:
    try:
        _usage_checks(args, "seqlab generate")
        if args.checkpoint and not args.tokenizer:
            raise ValueError("--checkpoint needs --tokenizer DIR to turn text into ids")
        from seqlab.inference.sampling import check_sampling_args

        check_sampling_args(args.temperature, args.top_p, args.top_k)
        if args.max_tokens < 0:
            raise ValueError(f"--max-tokens (max_new_tokens) must be >= 0, got {args.max_tokens}")
        check_text(args.prompt, "--prompt")
    except USER_ERRORS as exc:
        print(f"seqlab generate: error: {exc}", file=sys.stderr)
        return _usage_status(exc)
    try:
        from seqlab.inference.generate import generate_stream
        from seqlab.lm.loading import check_vocabularies, load_model

        model, tokenizer, _ = load_model(args.run, args.checkpoint, args.device, args.tokenizer)
        if tokenizer is None:
            raise FileNotFoundError(f"tokenizer directory {os.path.join(args.run, 'tokenizer')} does not exist")
        # everything is checked before the first byte is printed
        check_vocabularies(tokenizer.vocab_size, model.config.vocab_size,
                           "use the tokenizer the model was trained with (--tokenizer DIR)")
        eos = tokenizer.eot_id
        prompt = tokenizer.encode(check_text(args.prompt, "--prompt")) if args.prompt else []
        if not prompt:
            if eos is None:
                raise ValueError("empty --prompt and the tokenizer has no <|endoftext|> to start from")
            prompt = [eos]
        stream = generate_stream(model, prompt, args.max_tokens, args.temperature, args.top_p,
                                 args.top_k, eos, args.seed, compile=args.compile)  # checks the arguments now
        decoder = tokenizer.stream_decoder()
        out = sys.stdout
        out.write(args.prompt)
        out.flush()
        for token in stream:
            if token == eos:
                break
            out.write(decoder.feed(token))
            out.flush()
        out.write(decoder.finish() + "\n")
        out.flush()
    except USER_ERRORS as exc:
        print(f"seqlab generate: error: {exc}", file=sys.stderr)
        return _usage_status(exc) if isinstance(exc, IsADirectoryError) else FAILURE  # a folder given as the checkpoint
    return 0


# -- seqlab eval --------------------------------------------------------------------------------


def _register_eval(subparsers: Any) -> None:
    p = subparsers.add_parser("eval", help="held-out loss and perplexity",
                              description="Mean per-token loss and perplexity over a whole token split "
                                          "in non-overlapping context-length windows.")
    _add_model_source(p)
    p.add_argument("--data", required=True, metavar="FILE.npy", help="token ids, e.g. valid.npy")
    p.add_argument("--batch-size", type=positive_int, default=32, help="windows per batch (32)")
    p.add_argument("--context-length", type=positive_int, default=None,
                   help="window length, at most the model's (default: the model's)")
    p.add_argument("--threads", type=positive_int, default=None,
                   help="torch CPU threads (default: torch's choice; on a busy machine 1 can be faster)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run_eval)


def _run_eval(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    try:
        _usage_checks(args, "seqlab eval")
    except USER_ERRORS as exc:
        print(f"seqlab eval: error: {exc}", file=sys.stderr)
        return _usage_status(exc)
    try:
        from seqlab.lm.evaluation import evaluate
        from seqlab.lm.loading import load_model
        from seqlab.tokenizer.token_array import open_tokens

        if args.threads is not None:
            import torch

            torch.set_num_threads(args.threads)
        model = load_model(args.run, args.checkpoint, args.device).model
        data = open_tokens(args.data)
        result = evaluate(model, data, args.batch_size, args.context_length, progress=True,
                          name=args.data)
    except USER_ERRORS as exc:
        print(f"seqlab eval: error: {exc}", file=sys.stderr)
        return _usage_status(exc) if isinstance(exc, IsADirectoryError) else FAILURE  # a folder given as the checkpoint
    finite = math.isfinite(result.loss)
    if args.json:  # strict JSON: a non-finite number is written as null
        fields = {key: value if not isinstance(value, float) or math.isfinite(value) else None
                  for key, value in asdict(result).items()}
        print(json.dumps(fields, allow_nan=False))
    else:
        print(f"{args.data}: loss {result.loss:.4f} nats/token, perplexity {result.perplexity:.3f} "
              f"({result.tokens:,} tokens in {result.windows:,} windows)")
    if not finite:
        import torch

        broken = [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
        cause = (f"the checkpoint's weights hold NaN or inf ({', '.join(broken[:4])}"
                 f"{' ...' if len(broken) > 4 else ''})" if broken else "the activations overflowed")
        print(f"seqlab eval: error: the loss on {args.data} is {result.loss}, not a finite number: {cause}; "
              "evaluate an earlier checkpoint of the run (was training diverging?)", file=sys.stderr)
        return 1
    return 0
