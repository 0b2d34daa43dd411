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
import os
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
    "seqlab.sweep.cli",  # sweep, compare
    "seqlab.tokenizer.cli",  # bpe train, bpe export, tokenize
    "seqlab.seq2seq.cli",  # seq2seq train/translate/eval, paths
    "seqlab.interop.cli",  # export, import
    "seqlab.interpret.cli",  # interpret lens|attribute|patch|knockout|heads|depends
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
    """Run one command; returns its exit code.

    A reader that hangs up early (``seqlab labs | head -1``) is not an error worth a traceback:
    as the Python docs on SIGPIPE recommend, stdout is pointed at ``os.devnull`` (so the final
    flush at exit cannot fail again) and the exit code is 141 (128 + SIGPIPE), what a shell
    reports for any program stopped that way.
    """
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not as "Exception ignored" at exit
    except BrokenPipeError:
        _discard_stdout()
        return 141


def _run(argv: list[str] | None) -> int:
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


def _discard_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file descriptor (an in-memory stdout)
        pass


if __name__ == "__main__":
    sys.exit(main())
