"""CLI: ``seqlab seq2seq train|translate|eval|vocab`` and ``seqlab paths`` (the information-paths experiment).

Only the standard library is imported at the top; torch loads inside the handlers. Training flags
come from :class:`seqlab.seq2seq.settings.Seq2SeqTrainConfig`'s fields, as ``seqlab train``'s do
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
    _register_vocab(commands)
    _register_paths(subparsers)


def _error(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


# -- seqlab seq2seq train ------------------------------------------------------------------------


def _register_train(commands) -> None:
    from seqlab.seq2seq.settings import Seq2SeqTrainConfig
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
    from seqlab.seq2seq.settings import Seq2SeqTrainConfig
    from seqlab.settings import resolve_settings

    try:
        config, notes = resolve_settings(Seq2SeqTrainConfig, args)
    except (ValueError, FileNotFoundError) as error:  # a missing --config file or run fails (1)
        return _error(str(error), 1 if isinstance(error, FileNotFoundError) else 2)
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
    translate = commands.add_parser(
        "translate", help="translate text with a trained run",
        description="Translate each TEXT with the run's model (greedy, or --beam N). Prints one line per TEXT: "
                    "the text, a tab, its translation. A backslash, tab, newline or carriage return inside "
                    r"either is written as \\, \t, \n or \r, so every line holds exactly one tab. Empty text is "
                    "refused (as in the explorer). A TEXT outside what the run was trained on (characters not in "
                    "its vocabulary, words or sentences outside the fr-en grammar, a date in none of the dates "
                    "formats, a symbol string of an untrained length) gets a warning on stderr: its translation "
                    "is a guess. `seqlab seq2seq vocab --run DIR` lists what the run knows.")
    translate.add_argument("--run", required=True, metavar="DIR", help="run directory of seqlab seq2seq train")
    translate.add_argument("text", nargs="+", help="source text(s)")
    translate.add_argument("--beam", type=int, default=1, metavar="N", help="beam size (default 1: greedy)")
    translate.add_argument("--show-attention", action="store_true",
                           help="print the cross-attention of each output token over the source as a text heatmap")
    translate.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N | mps (default: auto)")
    translate.set_defaults(func=_run_translate)


TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def tsv_field(text: str) -> str:
    r"""``text`` escaped for one tab-separated field: ``"a\tb"`` -> ``"a\\tb"`` (backslash first, so
    the escaping can be undone unambiguously: \\ -> \, \t -> tab, \n -> newline, \r -> return)."""
    return text.translate(TSV_ESCAPES)


def heatmap_text(weights: list[list[float]], row_labels: list[str], column_labels: list[str]) -> str:
    """A text heatmap: one row per output token, one column per source token, darker = more weight.

    Weights are scaled by the largest one in the map; labels longer than 6 characters are cut."""
    peak = max((w for row in weights for w in row), default=0.0) or 1.0
    width = max(2, max((len(c) for c in column_labels), default=1))
    width = min(width, 6)
    label_width = min(8, max((len(r) for r in row_labels), default=1))
    lines = [" " * (label_width + 1) + " ".join(c[:width].rjust(width) for c in column_labels)]
    for label, row in zip(row_labels, weights):
        cells = [SHADES[_shade(w, peak)] * width for w in row]
        lines.append(label[:label_width].rjust(label_width) + " " + " ".join(cells))
    return "\n".join(lines)


def _shade(weight: float, peak: float) -> int:
    """Index into SHADES of ``weight`` on a map whose largest weight is ``peak``."""
    return min(len(SHADES) - 1, int(weight / peak * (len(SHADES) - 1) + 0.5))


def heatmap_legend(peak: float) -> str:
    """What each shading character of :func:`heatmap_text` stands for, on a map whose largest weight
    is ``peak``: the weights that round to it, e.g. ``'#' 0.73-0.84``."""
    steps = len(SHADES) - 1
    parts = []
    for index, char in enumerate(SHADES):
        low = max(0.0, (index - 0.5) / steps) * peak
        high = min(1.0, (index + 0.5) / steps) * peak
        parts.append(f"{char!r} {low:.2f}-{high:.2f}")
    return f"shading (weight, scaled to this map's largest, {peak:.2f}): " + ", ".join(parts)


def _token_labels(vocab, ids: list[int]) -> list[str]:
    """How each token is shown in a heatmap: escapes for control characters, a visible space."""
    return [repr(vocab.decode([i]))[1:-1].replace(" ", "\u2423") or "?" for i in ids]


def _check_run(run: str, command: str) -> None:
    """The run must be a seq2seq run: an LM run's error names `seqlab generate` / `seqlab eval`."""
    from seqlab.runs.kinds import check_kind

    check_kind(run, "seq2seq", command, run_dir=True)


def _run_translate(args: argparse.Namespace) -> int:
    if args.beam < 1:
        return _error(f"--beam must be >= 1, got {args.beam}", 2)
    from seqlab.cli_types import check_text

    try:
        for number, text in enumerate(args.text, 1):
            check_text(text, f"TEXT {number}")
            if not text:
                raise ValueError(f"TEXT {number} is empty: give some text to translate (the explorer refuses empty "
                                 "text too)")
        _check_run(args.run, "seqlab seq2seq translate")
    except FileNotFoundError as error:
        return _error(str(error))
    except ValueError as error:
        return _error(str(error), 2)
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
    from seqlab.seq2seq.coverage import check_input

    for number, (text, src, out) in enumerate(zip(args.text, sources, outputs), 1):
        for note in check_input(text, run.src_vocab, run.train_config):
            print(f"warning: TEXT {number}: {note.message}; its translation is a guess", file=sys.stderr)
        print(f"{tsv_field(text)}\t{tsv_field(run.tgt_vocab.decode(out))}")
        if not args.show_attention:
            continue
        from seqlab.model.taps import attention_patterns
        from seqlab.seq2seq.config import BOS_ID

        maps = attention_patterns(run.model, torch.tensor([src], device=run.device),
                                  torch.tensor([[BOS_ID, *out]], device=run.device))  # (layers, 1, heads, T, S)
        if not len(maps):
            print(f"  ({run.model.config.arch} has no attention: the decoder sees only the encoder's final state)")
            continue
        rows = _token_labels(run.tgt_vocab, out) + ["</s>"]
        columns = _token_labels(run.src_vocab, src)
        for layer, weights in enumerate(maps):
            mean = weights[0].float().mean(0).cpu()  # average over heads: (T, S)
            title = "attention" if len(maps) == 1 else f"decoder layer {layer}: cross-attention, mean over heads"
            print(f"  {title}")
            print("\n".join("  " + line for line in heatmap_text(mean.tolist(), rows, columns).splitlines()))
            print(f"  {heatmap_legend(float(mean.max()))}")
    return 0


# -- seqlab seq2seq eval ---------------------------------------------------------------------------


def _register_eval(commands) -> None:
    from seqlab.cli_types import non_negative_int, positive_int

    ev = commands.add_parser("eval", help="exact match, token accuracy and BLEU of a trained run",
                             description="Decode the run's validation pairs (or --pairs FILE.tsv) and report "
                                         "exact match, token accuracy, and BLEU (sacrebleu) for text tasks.")
    ev.add_argument("--run", required=True, metavar="DIR")
    ev.add_argument("--pairs", metavar="FILE.tsv", help="evaluate on these pairs instead")
    ev.add_argument("--beam", type=positive_int, default=1, metavar="N")
    ev.add_argument("--limit", type=positive_int, default=None, metavar="N",
                    help="evaluate the first N pairs only (N >= 1; default: all)")
    ev.add_argument("--show-errors", type=non_negative_int, default=5, metavar="N",
                    help="print N wrong outputs (default 5, 0 = none)")
    ev.add_argument("--json", action="store_true", help="print the numbers as JSON")
    ev.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N | mps (default: auto)")
    ev.set_defaults(func=_run_eval)


def _run_eval(args: argparse.Namespace) -> int:
    from seqlab.seq2seq.data import read_pairs_tsv
    from seqlab.seq2seq.metrics import sacrebleu_missing_message

    try:
        _check_run(args.run, "seqlab seq2seq eval")
    except FileNotFoundError as error:
        return _error(str(error))
    except ValueError as error:
        return _error(str(error), 2)
    from seqlab.seq2seq.data import load_pairs
    from seqlab.seq2seq.evaluation import evaluate_translations, is_text_task
    from seqlab.seq2seq.loading import load_run

    try:
        run = load_run(args.run, device=args.device)
        if args.pairs:  # this command has no --skip-bad-lines: bad lines are to be fixed
            pairs, _ = read_pairs_tsv(args.pairs, skip_flag=None)
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


# -- seqlab seq2seq vocab ----------------------------------------------------------------------------


def _register_vocab(commands) -> None:
    vocab = commands.add_parser(
        "vocab", help="what a run can translate: its vocabulary, and its task's words or formats",
        description="List what the run was trained on: the source and target characters (character runs) or "
                    "vocabulary sizes (BPE), and for the built-in tasks the fr-en grammar's words with their "
                    "English, the date formats of dates, or the symbols and lengths of copy/reverse/sort. "
                    "Reads only RUN/config.json and RUN/vocab.json.")
    vocab.add_argument("--run", required=True, metavar="DIR")
    vocab.add_argument("--json", action="store_true", help="print one JSON object")
    vocab.set_defaults(func=_run_vocab)


def _run_vocab(args: argparse.Namespace) -> int:
    from pathlib import Path

    try:
        _check_run(args.run, "seqlab seq2seq vocab")
        from seqlab.seq2seq.coverage import known_inputs
        from seqlab.seq2seq.loading import read_vocabs
        from seqlab.seq2seq.settings import Seq2SeqTrainConfig

        run = Path(args.run)
        cfg = Seq2SeqTrainConfig.from_run(run, notes=[])
        src_vocab, tgt_vocab = read_vocabs(run)
    except (FileNotFoundError, ValueError) as error:  # a missing run or file fails (1)
        return _error(str(error), 1 if isinstance(error, FileNotFoundError) else 2)
    info = known_inputs(cfg, src_vocab, tgt_vocab)
    if args.json:
        print(json.dumps(info, ensure_ascii=False))
        return 0
    print(format_known_inputs(info))
    return 0


def format_known_inputs(info: dict) -> str:
    """The text `seqlab seq2seq vocab` prints for :func:`seqlab.seq2seq.coverage.known_inputs`."""
    shown = lambda chars: " ".join(repr(c)[1:-1].replace(" ", "\u2423") for c in chars)  # noqa: E731
    trained_on = f"task {info['task']}" if info["task"] else f"pairs file {info['pairs']}"
    lines = [f"trained on {trained_on}; {info['kind']} vocabulary: {info['source_size']} source ids, "
             f"{info['target_size']} target ids (4 of each are <pad> <bos> <eos> <unk>)"]
    if "source_chars" in info:
        lines.append(f"source characters ({len(info['source_chars'])}): {shown(info['source_chars'])}")
        lines.append(f"target characters ({len(info['target_chars'])}): {shown(info['target_chars'])}")
        lines.append("any other character becomes <unk>; `seqlab seq2seq translate` warns about it")
    else:
        lines.append("byte-level BPE: every text can be encoded, but words unlike the training pairs are still "
                     "outside what the model learnt")
    if "words" in info:
        lines.append(f"the fr-en grammar: {len(info['words'])} French words (sentence: determiner + noun + "
                     "optional adjective after it, a verb in the present, passé composé or future, and for "
                     "voit/aime/suit an object)")
        width = max(len(word) for word in info["words"])
        lines += [f"  {word.ljust(width)}  {english}" for word, english in sorted(info["words"].items())]
    if "formats" in info:
        lines.append(f"dates from {info['years'][0]} to {info['years'][1]}, written as one of these "
                     f"{len(info['formats'])} formats (shown for 29 November 2026; the last three, with a two-digit "
                     "year, only for 2000-2099); the target is always YYYY-MM-DD:")
        lines += [f"  {example}" for example in info["formats"]]
    if "symbols" in info:
        lines.append(f"strings of the symbols {info['symbols']}, {info['lengths'][0]} to {info['lengths'][1]} "
                     "long (the trained lengths)")
    return "\n".join(lines)


# -- seqlab paths ----------------------------------------------------------------------------------


def _register_paths(subparsers) -> None:
    from seqlab.cli_types import non_negative_int, positive_int

    paths = subparsers.add_parser(
        "paths", help="the information-paths experiment: RNN vs RNN+attention vs Transformer",
        description="Train the three architectures at (about) equal parameter counts on copy, reverse and "
                    "dates; measure exact match by sequence length, also beyond the trained lengths; write "
                    "OUT/results.json, paths.png, attention heatmaps, dependency maps, report.md and the runs "
                    "under OUT/runs/. What you can rely on: the same command run again continues the experiment "
                    "(finished models are kept, an interrupted one resumes from its checkpoint, as `seqlab seq2seq train --resume` does); a run "
                    "with other --tasks into the same OUT adds them, and results.json and report.md keep the "
                    "earlier tasks; other settings (--fast, --seed) into the same OUT are refused, and so is a "
                    "non-empty OUT that is not a paths experiment's, unless --overwrite. OUT is locked while the "
                    "experiment runs: a second `seqlab paths` into it is refused, naming the first one's process. Ctrl-C or SIGTERM stops "
                    "the whole experiment: the model in training saves its checkpoint, no other model starts, "
                    "and the command exits 130 (Ctrl-C) or 143 (SIGTERM); rerun it to continue. A second signal "
                    "quits at once.")
    paths.add_argument("--out", required=True, metavar="DIR",
                       help="the experiment's folder: new, empty, or one this command wrote (it is continued)")
    paths.add_argument("--fast", action="store_true", help="a ~30 s smoke run (tiny models, few steps)")
    paths.add_argument("--tasks", default=None,
                       help="comma-separated subset of copy,reverse,dates (added to the tasks already in --out)")
    paths.add_argument("--seed", type=non_negative_int, default=0)
    paths.add_argument("--threads", type=positive_int, default=None, metavar="N", help="torch CPU threads (default 1)")
    paths.add_argument("--overwrite", action="store_true",
                       help="start over in --out: delete an earlier experiment's results, figures and runs there "
                            "(other files are left alone)")
    paths.add_argument("--no-progress", action="store_true")
    paths.set_defaults(func=_run_paths)


def _run_paths(args: argparse.Namespace) -> int:
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        return _error(f"--out {args.out} exists and is not a directory", 2)
    from seqlab.seq2seq.paths import PATHS_TASKS

    given = [t.strip() for t in args.tasks.split(",")] if args.tasks is not None else list(PATHS_TASKS)
    unknown = [repr(t) if not t else t for t in given if t not in PATHS_TASKS]
    if unknown:
        return _error(f"--tasks: unknown {', '.join(unknown)}; choose from {', '.join(PATHS_TASKS)}", 2)
    tasks = tuple(dict.fromkeys(given))  # a task named twice is trained once
    if len(tasks) < len(given):
        twice = sorted({t for t in given if given.count(t) > 1})
        print(f"note: --tasks names {', '.join(twice)} more than once; each task is trained once", file=sys.stderr)
    from seqlab.seq2seq.paths import run_paths

    try:
        results = run_paths(args.out, fast=args.fast, tasks=tasks, seed=args.seed, threads=args.threads,
                            progress=not args.no_progress, overwrite=args.overwrite)
    except (ValueError, OSError, RuntimeError) as error:  # FileExistsError: another experiment's --out, ...
        return _error(str(error))
    print(f"{results['total_seconds']:.0f} s; report: {os.path.join(args.out, 'report.md')}")
    from seqlab.runs.status import read_status
    from seqlab.training.interrupt import stopped_exit_status

    if read_status(results["status"]).finished:
        return 0
    return stopped_exit_status(results.get("stop_signal"))
