"""CLI: ``seqlab generate`` and ``seqlab eval``.

Only the standard library is imported here; torch loads inside the handlers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

from seqlab.cli_types import check_text, finite_float, positive_int

# errors a handler reports as one line (exit 2) instead of a traceback
USER_ERRORS = (ValueError, FileNotFoundError, IsADirectoryError, PermissionError, KeyError, RuntimeError)
# exit statuses: 2 when the command line is wrong (a flag's value, the wrong kind of run for the
# command, a folder given as a checkpoint), 1 when the command fails on what it reads or runs
USAGE, FAILURE = 2, 1


def _usage_checks(args: argparse.Namespace, command: str) -> None:
    """What can be refused from the command line alone, before a file is read."""
    from seqlab.runkind import check_run_kind

    check_run_kind(args.run or args.checkpoint, "lm", command, run_dir=args.run is not None)
    from seqlab.runtime import resolve_device

    resolve_device(args.device)  # a device this machine lacks


def _usage_status(error: BaseException) -> int:
    """A run that does not exist (or cannot be read) fails (1); anything else refused up front is the
    command line's fault (2)."""
    return FAILURE if isinstance(error, (FileNotFoundError, PermissionError)) else USAGE


def register(subparsers: Any) -> None:
    _register_generate(subparsers)
    _register_eval(subparsers)


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
    p.add_argument("--seed", type=int, default=None, help="seed for reproducible sampling")
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
        from seqlab.inference.loading import check_vocabularies, load_model

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
        from seqlab.inference.evaluate import evaluate
        from seqlab.inference.loading import load_model
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
