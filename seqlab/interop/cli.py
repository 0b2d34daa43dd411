"""CLI: ``seqlab export --to hf RUN OUT`` and ``seqlab import --from hf SRC OUT`` (standard library only
at import time; torch and safetensors load inside the handlers)."""

from __future__ import annotations

import argparse
import sys
import time

from seqlab.cli_types import file_given_as_folder


def register(subparsers) -> None:
    export = subparsers.add_parser(
        "export", help="write a trained run as a Hugging Face transformers Llama folder",
        description="Write RUN's latest checkpoint and tokenizer to the folder OUT: config.json "
                    "(LlamaConfig), model.safetensors, generation_config.json, tokenizer.json, "
                    "tokenizer_config.json, special_tokens_map.json. transformers loads it with "
                    "LlamaForCausalLM.from_pretrained(OUT) and AutoTokenizer.from_pretrained(OUT). "
                    "OUT is built beside and swapped in whole; it must be new, empty or an earlier export (or --overwrite).")
    export.add_argument("--to", required=True, choices=("hf",), help="the format (hf: transformers Llama)")
    export.add_argument("run", metavar="RUN", help="a `seqlab train` run directory")
    export.add_argument("out", metavar="OUT", help="output folder: new, empty, or an earlier export")
    export.add_argument("--overwrite", action="store_true", help="replace OUT whole, whatever it holds")
    export.set_defaults(func=_run_export)

    imp = subparsers.add_parser(
        "import", help="turn a local Hugging Face Llama folder into a seqlab run",
        description="Read the local transformers folder SRC (config.json of a LlamaForCausalLM, "
                    "tokenizer.json, model.safetensors or sharded safetensors) and write the run "
                    "directory OUT (config.json, checkpoints/latest.pt, tokenizer/), for seqlab "
                    "generate/eval/explore --run and train --resume. Never uses the network.")
    imp.add_argument("--from", dest="source_format", required=True, choices=("hf",),
                     help="the format (hf: transformers Llama)")
    imp.add_argument("src", metavar="SRC", help="a downloaded model folder")
    imp.add_argument("out", metavar="OUT", help="the run directory to create: new, empty, or an earlier import "
                     "not trained since")
    imp.add_argument("--overwrite", action="store_true", help="replace OUT whole, whatever it holds")
    imp.set_defaults(func=_run_import)


def _run_export(args: argparse.Namespace) -> int:
    def convert():
        from seqlab.interop.export import (
            export_hf,  # it names a seq2seq run as one, not by its fields
        )

        return export_hf(args.run, args.out, overwrite=args.overwrite)

    return _report(convert, f"exported {args.run}", "load with transformers: LlamaForCausalLM.from_pretrained({out!r})",
                   args.out)


def _run_import(args: argparse.Namespace) -> int:
    def convert():
        from seqlab.interop.hf_import import import_hf

        return import_hf(args.src, args.out, overwrite=args.overwrite)

    return _report(convert, f"imported {args.src}", "try: seqlab generate --run {out} --prompt 'Hello'", args.out)


def _report(convert, done: str, hint: str, out_arg: str) -> int:
    """Run ``convert`` (returns the folder written); print one line on success, the error otherwise."""
    if file_given_as_folder(out_arg, "OUT"):
        return 2
    started = time.perf_counter()
    try:
        out = convert()
    except (OSError, ValueError) as error:
        from seqlab.runs.kinds import RunKindError

        print(f"error: {error}", file=sys.stderr)
        return 2 if isinstance(error, RunKindError) else 1  # the wrong kind of run is the command line's fault
    print(f"{done} -> {out} in {time.perf_counter() - started:.1f} s ({hint.format(out=str(out))})")
    return 0
