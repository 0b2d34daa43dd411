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
    "seqlab.lm.cli",  # data, prepare, train, generate, eval
    "seqlab.demo.cli",  # demo
    "seqlab.sweep.cli",  # sweep, compare
    "seqlab.tokenizer.cli",  # bpe train, bpe export, tokenize
    "seqlab.seq2seq.cli",  # seq2seq train/translate/eval, paths
    "seqlab.interop.cli",  # export, import
    "seqlab.learn.cli",  # learn
    "seqlab.interpret.cli",  # interpret lens|attribute|patch|knockout|heads|depends
    "seqlab.induction.cli",  # induction
)


class SeqlabParser(argparse.ArgumentParser):
    """An ArgumentParser whose subcommands (``add_subparsers`` makes them of the same class) note
    themselves on the namespace, so that an unknown flag is reported by the subcommand it was given
    to, with that subcommand's usage and the closest flag it has (:func:`unknown_flags_error`)."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if not hasattr(namespace, "_seqlab_parser"):  # the innermost subcommand sets it first
            namespace._seqlab_parser = self
        return namespace, extras

    def _check_value(self, action, value):
        """argparse's "invalid choice: 'chek'", with the closest choice: "(did you mean check?)"."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as error:
            import difflib

            close = difflib.get_close_matches(str(value), [str(c) for c in action.choices or ()], n=1, cutoff=0.6)
            if not close:
                raise
            raise argparse.ArgumentError(action, f"{error.message} (did you mean {close[0]}?)") from None


def unknown_flags_error(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """"unrecognized arguments: --lr-rate 3 (did you mean --lr?)": the closest of ``parser``'s
    option strings for each unknown flag (difflib), e.g. under `seqlab train`."""
    import difflib

    options = [o for o in parser._option_string_actions if o.startswith("--")]
    flags = [extra.split("=", 1)[0] for extra in extras if extra.startswith("-")]
    hints = []
    for flag in flags:
        close = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
        if close:
            hints.append(f"did you mean {close[0]}?" if len(flags) == 1 else f"{flag}: did you mean {close[0]}?")
    return f"unrecognized arguments: {' '.join(extras)}" + (f" ({'; '.join(hints)})" if hints else "")


def build_parser() -> argparse.ArgumentParser:
    parser = SeqlabParser(
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
    args, extras = parser.parse_known_args(argv)
    used = vars(args).pop("_seqlab_parser", parser)
    if extras:
        used.error(unknown_flags_error(used, extras))  # that subcommand's usage, exit status 2
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
