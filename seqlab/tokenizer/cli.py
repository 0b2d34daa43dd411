"""CLI: ``seqlab bpe train``, ``seqlab bpe export`` and ``seqlab tokenize`` (standard library only at import time)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from seqlab.cli_types import file_given_as_folder


def register(subparsers) -> None:
    bpe = subparsers.add_parser("bpe", help="byte-level BPE tokenizer tools")
    actions = bpe.add_subparsers(dest="bpe_command", metavar="ACTION", required=True)
    train = actions.add_parser(
        "train",
        help="train a byte-level BPE tokenizer on a text file",
        description="Train byte-level BPE (GPT-2 pre-tokenization) and write vocab.json, merges.txt "
        "and special_tokens.json to --out.",
    )
    train.add_argument("--input", required=True, help="UTF-8 training text")
    train.add_argument("--vocab-size", type=int, required=True, help="total ids: special tokens + 256 bytes + merges")
    train.add_argument("--special-token", action="append", default=[], metavar="T",
                       help="special token (repeatable; id order = given order), e.g. '<|endoftext|>'")
    train.add_argument("--out", required=True, help="output directory: new, empty, or a tokenizer this command wrote")
    train.add_argument("--overwrite", action="store_true", help="replace --out whole, whatever it holds")
    train.add_argument("--workers", type=int, default=None, help="pre-tokenization processes (default: all cores)")
    train.add_argument("--no-progress", action="store_true", help="no progress bars")
    train.set_defaults(func=_run_train)

    export = actions.add_parser(
        "export",
        help="write a tokenizer in Hugging Face (tokenizer.json) or tiktoken format",
        description="Write the seqlab tokenizer in TOKENIZER_DIR (vocab.json, merges.txt, ...; a run "
        "directory's tokenizer/ is found too) to the folder OUT: --to hf writes tokenizer.json, "
        "tokenizer_config.json and special_tokens_map.json (tokenizers.Tokenizer.from_file and "
        "transformers.AutoTokenizer load them); --to tiktoken writes tokenizer.tiktoken and "
        "tiktoken.json (pat_str and special_tokens for tiktoken.Encoding). OUT is replaced whole: it must be "
        "new, empty or an earlier export of the same format (or --overwrite).",
    )
    export.add_argument("--to", required=True, choices=("hf", "tiktoken"), help="the format to write")
    export.add_argument("tokenizer_dir", metavar="TOKENIZER_DIR", help="a seqlab tokenizer directory (or a run)")
    export.add_argument("out", metavar="OUT", help="output folder: new, empty, or one this command wrote")
    export.add_argument("--overwrite", action="store_true", help="replace OUT whole, whatever it holds")
    export.set_defaults(func=_run_export)

    tokenize = subparsers.add_parser(
        "tokenize",
        help="encode a text file to a .npy array of token ids",
        description="Encode FILE with a saved tokenizer, in parallel chunks, streaming ids to a .npy file "
        "(uint16 when the vocabulary fits, else uint32).",
    )
    tokenize.add_argument("--tokenizer", required=True, help="directory written by `seqlab bpe train`")
    tokenize.add_argument("--input", required=True, help="UTF-8 text file")
    tokenize.add_argument("--out", required=True, help="output .npy file")
    tokenize.add_argument("--workers", type=int, default=None,
                          help="processes (default: all cores for files of 4 MB and more, else 1)")
    tokenize.add_argument("--no-progress", action="store_true", help="no progress bar")
    tokenize.set_defaults(func=_run_tokenize)


def _peak_rss_mib() -> tuple[float, float] | None:
    """Peak resident memory (MiB) of this process and of its largest finished child; None off Unix."""
    try:
        import resource
    except ImportError:
        return None
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / scale
    return own, children


def _run_train(args: argparse.Namespace) -> int:
    from seqlab.atomic import remove_stale_temporaries
    from seqlab.outdir import check_out_folder, holds_only, output_folder
    from seqlab.tokenizer import Tokenizer, train_bpe
    from seqlab.tokenizer.files import TOKENIZER_FILES, check_special_tokens

    # a tokenizer from before the marker: seqlab's files only, with its special_tokens.json (a GPT-2
    # folder of vocab.json and merges.txt is someone else's)
    rule = dict(overwrite=args.overwrite, recognise=holds_only(TOKENIZER_FILES, ["special_tokens.json"]),
                flag="--out")

    if file_given_as_folder(args.out, "--out"):
        return 2
    started = time.perf_counter()
    try:
        # everything that can be refused is refused now, not after minutes of training
        check_out_folder(args.out, "seqlab bpe train", **rule)
        try:
            check_special_tokens(args.special_token)
            from seqlab.tokenizer.trainer import _check_vocab_size

            _check_vocab_size(args.vocab_size, args.special_token)
        except ValueError as error:  # a --special-token that cannot be one, a --vocab-size too small for the bytes
            print(f"error: {error}", file=sys.stderr)
            return 2
        remove_stale_temporaries(args.out)
        vocab, merges = train_bpe(args.input, args.vocab_size, args.special_token,
                                  num_workers=args.workers, progress=not args.no_progress)
        tokenizer = Tokenizer(vocab, merges, args.special_token)
        with output_folder(args.out, "seqlab bpe train", **rule) as building:
            tokenizer.save(building)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - started
    peak = _peak_rss_mib()
    special_ids = set(tokenizer.special_token_ids.values())
    longest = max((token for index, token in vocab.items() if index not in special_ids), key=len)
    print(f"trained {len(vocab)} tokens ({len(merges)} merges) in {seconds:.2f} s -> {args.out}")
    if len(vocab) < args.vocab_size:
        print(stopped_short_message(args.input, args.vocab_size, len(vocab), len(merges)), file=sys.stderr)
    if peak is not None:
        print(f"peak memory: {peak[0]:.0f} MiB (main process), {peak[1]:.0f} MiB (largest worker)")
    print(f"longest token: {len(longest)} bytes {longest.decode('utf-8', errors='replace')!r}")
    return 0


def _run_export(args: argparse.Namespace) -> int:
    from seqlab.outdir import check_out_folder, holds_only, output_folder
    from seqlab.tokenizer import Tokenizer

    if args.to == "hf":
        from seqlab.tokenizer.hf_format import HF_TOKENIZER_FILES as files
        from seqlab.tokenizer.hf_format import write_hf_tokenizer as write
    else:
        from seqlab.tokenizer.tiktoken_format import TIKTOKEN_FILES as files
        from seqlab.tokenizer.tiktoken_format import write_tiktoken as write
    from seqlab.tokenizer.files import tokenizer_dir_of

    command = f"seqlab bpe export --to {args.to}"
    # tiktoken.json is seqlab's own file: a folder of only those two is an export from before the marker
    recognise = holds_only(files, files) if args.to == "tiktoken" else None
    if file_given_as_folder(args.out, "OUT"):
        return 2
    try:
        check_out_folder(args.out, command, overwrite=args.overwrite, recognise=recognise)
        tokenizer = Tokenizer.load(tokenizer_dir_of(args.tokenizer_dir))
        with output_folder(args.out, command, overwrite=args.overwrite, recognise=recognise) as building:
            write(tokenizer, building)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {', '.join(files)} ({tokenizer.vocab_size} ids, {len(tokenizer.special_tokens)} special) -> {args.out}")
    return 0


def stopped_short_message(corpus: str, requested: int, trained: int, merges: int) -> str:
    """Why BPE training gave fewer tokens than asked for: no pair of adjacent tokens was left."""
    return (f"note: the vocabulary has {trained} tokens, not the requested {requested}: after {merges} merges "
            f"no pair of adjacent tokens is left to merge (every pre-token of the {os.path.getsize(corpus):,}-byte "
            f"corpus {corpus!r} is already one token); the corpus is too small for {requested} tokens: "
            f"use more text or --vocab-size {trained}")


def _run_tokenize(args: argparse.Namespace) -> int:
    from seqlab.atomic import remove_stale_temporaries
    from seqlab.tokenizer import Tokenizer
    from seqlab.tokenizer.npy_stream import NpyStreamWriter

    started = time.perf_counter()
    try:
        out_dir = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(out_dir):
            raise FileNotFoundError(f"output folder {out_dir!r} does not exist")
        if os.path.isdir(args.out):
            raise IsADirectoryError(f"--out {args.out!r} is a directory; give the .npy file to write")
        if not args.out.endswith(".npy"):
            raise ValueError(f"--out {args.out!r} does not end in .npy; token ids are written as a .npy "
                             f"file (e.g. --out {os.path.splitext(args.out)[0] or 'ids'}.npy)")
        if os.path.abspath(args.out) == os.path.abspath(args.input) or (
                os.path.exists(args.out) and os.path.exists(args.input) and os.path.samefile(args.out, args.input)):
            raise ValueError(f"--out {args.out!r} is the --input file; it would replace the text with its "
                             f"token ids: give another .npy path")
    except (IsADirectoryError, ValueError) as error:  # the flags themselves are wrong
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        remove_stale_temporaries(out_dir)
        tokenizer = Tokenizer.load(args.tokenizer)
        with NpyStreamWriter(args.out, tokenizer.id_dtype()) as writer:
            for ids in tokenizer.iter_encode_file(args.input, args.workers, progress=not args.no_progress):
                writer.write(ids)
    except (OSError, ValueError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - started
    size = os.path.getsize(args.input)
    ratio = size / writer.length if writer.length else float("nan")
    print(f"{writer.length} tokens ({writer.dtype.name}) -> {args.out}")
    print(f"{ratio:.3f} bytes/token, {size / 1e6 / seconds:.2f} MB/s ({seconds:.2f} s)")
    return 0
