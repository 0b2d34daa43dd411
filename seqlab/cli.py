"""The `seqlab` command line.

Each area of the package owns its subcommands in a module that exposes
``register(subparsers)``. Those modules import only the standard library at the
top, so ``seqlab --help`` stays fast; heavy imports (torch, numpy) happen inside
the command handlers. A handler receives the parsed ``argparse.Namespace`` and
returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

import seqlab

# module path -> the subcommands it registers (for the reader; argparse is the source of truth)
COMMAND_MODULES: tuple[str, ...] = (
    "seqlab.labs.cli",  # labs
    "seqlab.explorer.cli",  # explore
    "seqlab.accounting.cli",  # accounting
    "seqlab.inference.cli",  # generate, eval
    "seqlab.training.cli",  # data, prepare, train
    "seqlab.demo.cli",  # demo
    "seqlab.tokenizer.cli",  # bpe train, tokenize
    "seqlab.seq2seq.cli",  # seq2seq train/translate/eval, paths
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seqlab",
        description="Sequence models from a one-number RNN to a trained Transformer LM.",
    )
    parser.add_argument("--version", action="version", version=f"seqlab {seqlab.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "func", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
