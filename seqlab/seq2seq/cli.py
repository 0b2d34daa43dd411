"""CLI: ``seqlab seq2seq train|translate|eval`` and ``seqlab paths`` (the information-paths experiment).

Only the standard library is imported at the top; torch loads inside the handlers. Training flags
come from :class:`seqlab.seq2seq.train_config.Seq2SeqTrainConfig`'s fields, as ``seqlab train``'s do
from TrainConfig's (:func:`seqlab.settings.add_config_arguments`): the defaults live in one place
(``--help`` shows them), and ``--resume`` keeps the run's saved settings except the flags given again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

SHADES = " .:-=+*#%@"  # text heatmap, light to dark


def register(subparsers) -> None:
    seq2seq = subparsers.add_parser("seq2seq", help="encoder-decoder models: train, translate, eval",
                                    description="Sequence-to-sequence models (RNN, RNN with attention, "
                                                "Transformer) on built-in tasks or TSV sentence pairs.")
    commands = seq2seq.add_subparsers(dest="seq2seq_command", metavar="COMMAND", required=True)
    _register_train(commands)
    _register_translate(commands)
    _register_eval(commands)
    _register_paths(subparsers)


def _error(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


# -- seqlab seq2seq train ------------------------------------------------------------------------


def _register_train(commands) -> None:
    from seqlab.seq2seq.train_config import Seq2SeqTrainConfig
    from seqlab.settings import add_config_arguments

    train = commands.add_parser(
        "train", help="train an encoder-decoder on a built-in task or a TSV file",
        description="Train (or --resume) a seq2seq model on the training engine of `seqlab train` (the same "
                    "flags: --precision, --compile, --grad-accum-steps, --time-budget-s, --reschedule, torchrun). "
                    "Writes OUT/config.json, vocab.json, checkpoints/latest.pt, log.jsonl, loss_curve.png. Settings: "
                    "defaults < --config TOML < flags; with --resume, the run's config.json replaces the defaults. "
                    "A run directory is locked while it trains.")
    add_config_arguments(train, Seq2SeqTrainConfig)
    train.set_defaults(func=_run_train)


def _run_train(args: argparse.Namespace) -> int:
    from seqlab.seq2seq.train_config import Seq2SeqTrainConfig
    from seqlab.settings import resolve_settings

    try:
        config, notes = resolve_settings(Seq2SeqTrainConfig, args)
    except (ValueError, FileNotFoundError) as error:
        return _error(str(error), 2)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    from seqlab.seq2seq.task import train

    try:
        result = train(config)
    except (ValueError, OSError, RuntimeError, MemoryError) as error:  # PairsFileError, NonFiniteLossError, ...
        return _error(str(error))
    print(result.summary(tokens="target tokens"))
    return result.exit_status


# -- seqlab seq2seq translate ----------------------------------------------------------------------


def _register_translate(commands) -> None:
    translate = commands.add_parser("translate", help="translate text with a trained run",
                                    description="Translate each TEXT with the run's model (greedy, or --beam N).")
    translate.add_argument("--run", required=True, metavar="DIR", help="run directory of seqlab seq2seq train")
    translate.add_argument("text", nargs="+", help="source text(s)")
    translate.add_argument("--beam", type=int, default=1, metavar="N", help="beam size (default 1: greedy)")
    translate.add_argument("--show-attention", action="store_true",
                           help="print the cross-attention of each output token over the source as a text heatmap")
    translate.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N | mps (default: auto)")
    translate.set_defaults(func=_run_translate)


def heatmap_text(weights: list[list[float]], row_labels: list[str], column_labels: list[str]) -> str:
    """A text heatmap: one row per output token, one column per source token, darker = more weight.

    Weights are scaled by the largest one in the map; labels longer than 6 characters are cut."""
    peak = max((w for row in weights for w in row), default=0.0) or 1.0
    width = max(2, max((len(c) for c in column_labels), default=1))
    width = min(width, 6)
    label_width = min(8, max((len(r) for r in row_labels), default=1))
    lines = [" " * (label_width + 1) + " ".join(c[:width].rjust(width) for c in column_labels)]
    for label, row in zip(row_labels, weights):
        cells = [SHADES[min(len(SHADES) - 1, int(w / peak * (len(SHADES) - 1) + 0.5))] * width for w in row]
        lines.append(label[:label_width].rjust(label_width) + " " + " ".join(cells))
    return "\n".join(lines)


def _token_labels(vocab, ids: list[int]) -> list[str]:
    """How each token is shown in a heatmap: escapes for control characters, a visible space."""
    return [repr(vocab.decode([i]))[1:-1].replace(" ", "\u2423") or "?" for i in ids]


def _run_translate(args: argparse.Namespace) -> int:
    if args.beam < 1:
        return _error(f"--beam must be >= 1, got {args.beam}", 2)
    from seqlab.seq2seq.decoding import decode_limit, translate_ids
    from seqlab.seq2seq.loading import load_run

    try:
        run = load_run(args.run, device=args.device)
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        return _error(str(error))
    import torch

    sources = [run.src_vocab.encode(text) for text in args.text]
    limit = decode_limit(run.model, [len(s) + 1 for s in sources])
    try:
        outputs = translate_ids(run.model, sources, beam_size=args.beam, max_len=limit, device=run.device)
    except ValueError as error:
        return _error(str(error))
    for text, src, out in zip(args.text, sources, outputs):
        print(f"{text}\t{run.tgt_vocab.decode(out)}")
        if not args.show_attention:
            continue
        from seqlab.seq2seq.config import BOS_ID, EOS_ID

        with torch.no_grad():
            src_t = torch.tensor([src], device=run.device)
            tgt_t = torch.tensor([[BOS_ID, *out]], device=run.device)
            maps = run.model.attention_maps(src_t, tgt_t)
        if not maps:
            print(f"  ({run.model.config.arch} has no attention: the decoder sees only the encoder's final state)")
            continue
        rows = _token_labels(run.tgt_vocab, out) + ["</s>"]
        columns = _token_labels(run.src_vocab, src)
        for layer, weights in enumerate(maps):
            mean = weights[0].float().mean(0).cpu()  # average over heads: (T, S)
            title = "attention" if len(maps) == 1 else f"decoder layer {layer}: cross-attention, mean over heads"
            print(f"  {title}")
            print("\n".join("  " + line for line in heatmap_text(mean.tolist(), rows, columns).splitlines()))
    return 0


# -- seqlab seq2seq eval ---------------------------------------------------------------------------


def _register_eval(commands) -> None:
    ev = commands.add_parser("eval", help="exact match, token accuracy and BLEU of a trained run",
                             description="Decode the run's validation pairs (or --pairs FILE.tsv) and report "
                                         "exact match, token accuracy, and BLEU (sacrebleu) for text tasks.")
    ev.add_argument("--run", required=True, metavar="DIR")
    ev.add_argument("--pairs", metavar="FILE.tsv", help="evaluate on these pairs instead")
    ev.add_argument("--beam", type=int, default=1, metavar="N")
    ev.add_argument("--limit", type=int, default=None, metavar="N", help="evaluate the first N pairs only")
    ev.add_argument("--show-errors", type=int, default=5, metavar="N", help="print N wrong outputs (default 5)")
    ev.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ev.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N | mps (default: auto)")
    ev.set_defaults(func=_run_eval)


def _run_eval(args: argparse.Namespace) -> int:
    if args.beam < 1:
        return _error(f"--beam must be >= 1, got {args.beam}", 2)
    from seqlab.seq2seq.data import read_pairs_tsv
    from seqlab.seq2seq.metrics import sacrebleu_missing_message
    from seqlab.seq2seq.dataset import load_pairs
    from seqlab.seq2seq.evaluation import evaluate_translations, is_text_task
    from seqlab.seq2seq.loading import load_run

    try:
        run = load_run(args.run, device=args.device)
        if args.pairs:
            pairs, _ = read_pairs_tsv(args.pairs)
            source = args.pairs
        else:
            pairs = load_pairs(run.train_config)[1]
            source = "the run's validation pairs"
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        return _error(str(error))
    if args.limit is not None:
        pairs = pairs[: args.limit]
    with_bleu = bool(args.pairs) or is_text_task(run.train_config)
    bleu_note = None
    try:
        import sacrebleu  # noqa: F401
    except ImportError:
        if with_bleu:
            with_bleu, bleu_note = False, sacrebleu_missing_message()
    try:
        result = evaluate_translations(run.model, pairs, run.src_vocab, run.tgt_vocab, beam_size=args.beam,
                                       with_bleu=with_bleu, device=run.device)
    except ValueError as error:
        return _error(str(error))
    numbers = {"pairs": len(pairs), "exact_match": result.exact_match, "token_accuracy": result.token_accuracy,
               "bleu": result.bleu, "step": run.step, "beam": args.beam}
    if args.json:
        print(json.dumps(numbers))
        return 0
    print(f"{run.run_dir} (step {run.step}) on {source}: {len(pairs)} pairs, "
          f"{'greedy' if args.beam == 1 else f'beam {args.beam}'}")
    print(f"exact match     {result.exact_match:.2%}")
    print(f"token accuracy  {result.token_accuracy:.2%}")
    if result.bleu is not None:
        print(f"BLEU            {result.bleu:.2f}")
    elif bleu_note:
        print(f"BLEU            not computed: {bleu_note}")
    wrong = [(s, h, r) for s, h, r in zip(result.sources, result.hypotheses, result.references) if h != r]
    for s, h, r in wrong[: args.show_errors]:
        print(f"  {s!r} -> {h!r} (expected {r!r})")
    return 0


# -- seqlab paths ----------------------------------------------------------------------------------


def _register_paths(subparsers) -> None:
    paths = subparsers.add_parser(
        "paths", help="the information-paths experiment: RNN vs RNN+attention vs Transformer",
        description="Train the three architectures at (about) equal parameter counts on copy, reverse and "
                    "dates; measure exact match by sequence length, also beyond the trained lengths; write "
                    "OUT/results.json, paths.png, attention heatmaps, dependency maps and report.md.")
    paths.add_argument("--out", required=True, metavar="DIR")
    paths.add_argument("--fast", action="store_true", help="a ~30 s smoke run (tiny models, few steps)")
    paths.add_argument("--tasks", default=None, help="comma-separated subset of copy,reverse,dates")
    paths.add_argument("--seed", type=int, default=0)
    paths.add_argument("--threads", type=int, default=None, metavar="N", help="torch CPU threads")
    paths.add_argument("--no-progress", action="store_true")
    paths.set_defaults(func=_run_paths)


def _run_paths(args: argparse.Namespace) -> int:
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        return _error(f"--out {args.out} exists and is not a directory", 2)
    from seqlab.seq2seq.paths import PATHS_TASKS, run_paths

    tasks = tuple(t.strip() for t in args.tasks.split(",")) if args.tasks else PATHS_TASKS
    unknown = [t for t in tasks if t not in PATHS_TASKS]
    if unknown:
        return _error(f"--tasks: unknown {', '.join(unknown)}; choose from {', '.join(PATHS_TASKS)}", 2)
    try:
        results = run_paths(args.out, fast=args.fast, tasks=tasks, seed=args.seed, threads=args.threads,
                            progress=not args.no_progress)
    except (ValueError, OSError, RuntimeError) as error:
        return _error(str(error))
    print(f"{results['total_seconds']:.0f} s; report: {os.path.join(args.out, 'report.md')}")
    return 0
