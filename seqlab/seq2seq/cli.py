"""CLI: ``seqlab seq2seq train|translate|eval|vocab`` and ``seqlab paths`` (the information-paths experiment).

Only the standard library is imported at the top; torch loads inside the handlers. Training flags
leave out their defaults (argparse.SUPPRESS), so the defaults live in one place,
:class:`seqlab.seq2seq.train_config.Seq2SeqTrainConfig` (``--help`` shows them), and ``--resume``
keeps the run's saved settings except the flags given again.
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
    from seqlab.seq2seq.config import ARCHS, ATTENTION_SCORES, CELLS, FFNS, NORM_POSITIONS, NORMS, POSITIONALS
    from seqlab.seq2seq.tasks import DEFAULT_LENGTHS, TASKS

    train = commands.add_parser(
        "train", help="train an encoder-decoder on a built-in task or a TSV file",
        description="Train (or --resume) a seq2seq model. Writes OUT/config.json, vocab.json, "
                    "checkpoints/latest.pt, log.jsonl, loss_curve.png. With --resume, unset flags keep the "
                    "run's saved settings.",
        argument_default=argparse.SUPPRESS)
    add = train.add_argument
    data = train.add_argument_group("data")
    data.add_argument("--task", choices=TASKS, help="built-in generated task")
    data.add_argument("--pairs", metavar="FILE.tsv", help="source<TAB>target lines (Tatoeba/Anki export format)")
    data.add_argument("--skip-bad-lines", action="store_true", help="leave out (and list) unusable lines of --pairs")
    data.add_argument("--tokenize", choices=("char", "bpe"), help="characters or byte-level BPE")
    data.add_argument("--tokenizer", metavar="DIR", help="BPE tokenizer directory (default: train one on the pairs)")
    data.add_argument("--bpe-vocab-size", type=int, metavar="N", help="size of a BPE trained on the pairs")
    data.add_argument("--train-size", type=int, metavar="N", help="built-in task: training pairs")
    data.add_argument("--valid-size", type=int, metavar="N", help="built-in task: validation pairs")
    data.add_argument("--valid-fraction", type=float, metavar="F", help="--pairs: share held out for validation")
    data.add_argument("--min-len", type=int, metavar="N", help=f"copy/reverse/sort: shortest source (default: {DEFAULT_LENGTHS[0]})")
    data.add_argument("--max-len", type=int, metavar="N", help=f"copy/reverse/sort: longest source (default: {DEFAULT_LENGTHS[1]})")
    model = train.add_argument_group("model")
    model.add_argument("--arch", choices=ARCHS)
    model.add_argument("--d-model", type=int, metavar="N", help="embedding (and RNN hidden) size")
    model.add_argument("--num-heads", type=int, metavar="N")
    model.add_argument("--layers", type=int, metavar="N", help="encoder and decoder layers")
    model.add_argument("--d-ff", type=int, metavar="N")
    model.add_argument("--max-seq-len", type=int, metavar="N", help="default: longest example + 8")
    model.add_argument("--norm", choices=NORMS)
    model.add_argument("--norm-position", choices=NORM_POSITIONS)
    model.add_argument("--positional", choices=POSITIONALS)
    model.add_argument("--ffn", choices=FFNS)
    model.add_argument("--cell", choices=CELLS, help="RNN cell")
    model.add_argument("--attention-score", choices=ATTENTION_SCORES, help="rnn-attention scoring")
    model.add_argument("--tie-output", action="store_true", help="output layer reuses the target embeddings")
    opt = train.add_argument_group("optimisation and stopping")
    opt.add_argument("--steps", type=int, metavar="N")
    opt.add_argument("--batch-size", type=int, metavar="N")
    opt.add_argument("--lr", type=float)
    opt.add_argument("--min-lr", type=float)
    opt.add_argument("--warmup-steps", type=int, metavar="N")
    opt.add_argument("--weight-decay", type=float)
    opt.add_argument("--grad-clip", type=float)
    opt.add_argument("--eval-interval", type=int, metavar="N")
    opt.add_argument("--eval-size", type=int, metavar="N", help="validation pairs decoded at each evaluation")
    opt.add_argument("--checkpoint-interval", type=int, metavar="N")
    opt.add_argument("--target-exact-match", type=float, metavar="F", help="stop once validation exact match >= F")
    opt.add_argument("--max-minutes", type=float, metavar="M", help="stop (and save) after M minutes")
    add("--out", dest="out_dir", metavar="DIR", help="run directory")
    add("--seed", type=int)
    add("--device", help="auto | cpu | cuda | mps")
    add("--threads", type=int, metavar="N", help="torch CPU threads")
    add("--no-progress", dest="progress", action="store_false")
    add("--resume", action="store_true", help="continue OUT/checkpoints/latest.pt")
    add("--overwrite", action="store_true", help="start over in an OUT that holds a run")
    _show_defaults(train)
    train.set_defaults(func=_run_train)


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append "(default: X)" to each flag's help, X read from Seq2SeqTrainConfig (one source)."""
    import dataclasses

    from seqlab.seq2seq.train_config import Seq2SeqTrainConfig

    defaults = {f.name: f.default for f in dataclasses.fields(Seq2SeqTrainConfig)}
    for action in parser._actions:
        value = defaults.get(action.dest)
        if value is None or isinstance(value, bool) or action.help == argparse.SUPPRESS:
            continue
        action.help = f"{action.help} (default: {value})" if action.help else f"default: {value}"


def _train_settings(args: argparse.Namespace) -> dict:
    """The flags that were given, as Seq2SeqTrainConfig fields."""
    skip = {"func", "command", "seq2seq_command"}
    return {k: v for k, v in vars(args).items() if k not in skip}


def _run_train(args: argparse.Namespace) -> int:
    given = _train_settings(args)
    if "pairs" in given and "task" not in given:
        given["task"] = None
    try:
        from seqlab.seq2seq.train_config import Seq2SeqTrainConfig

        if given.get("resume"):
            out = given.get("out_dir", "runs/seq2seq")
            saved_path = os.path.join(out, "config.json")
            if not os.path.isfile(saved_path):
                return _error(f"--resume: {saved_path} does not exist (nothing to resume in {out})", 2)
            with open(saved_path, encoding="utf-8") as handle:
                saved = json.load(handle)["train"]
            saved.update(given)
            given = saved
        config = Seq2SeqTrainConfig.from_dict(given, source="flags")
    except (ValueError, KeyError, json.JSONDecodeError) as error:
        return _error(str(error), 2)
    from seqlab.seq2seq.data import PairsFileError
    from seqlab.seq2seq.train import train

    try:
        result = train(config)
    except PairsFileError as error:
        return _error(str(error))
    except (ValueError, OSError, RuntimeError, FloatingPointError) as error:
        return _error(str(error))
    summary = f"{result.status} at step {result.steps}"
    if result.train_loss is not None:
        summary += f", train loss {result.train_loss:.4f}"
    if result.val_exact_match is not None:
        summary += f", validation exact match {result.val_exact_match:.1%}"
    summary += f", {result.elapsed:.1f} s; run: {result.run_dir}"
    print(summary)
    return 130 if result.status == "interrupted" else 0


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
    translate.add_argument("--device", default="cpu")
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
    from seqlab.runkind import check_run_kind

    check_run_kind(run, "seq2seq", command)


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
    from seqlab.seq2seq.train import decode_limit, load_run, translate_ids

    try:
        run = load_run(args.run, device=args.device)
    except (FileNotFoundError, ValueError, RuntimeError) as error:
        return _error(str(error))
    import torch

    sources = [run.src_vocab.encode(text) for text in args.text]
    limit = decode_limit(run.model, [len(s) + 1 for s in sources])
    try:
        outputs = translate_ids(run.model, sources, beam_size=args.beam, max_len=limit, device=args.device)
    except ValueError as error:
        return _error(str(error))
    from seqlab.seq2seq.coverage import check_input

    for number, (text, src, out) in enumerate(zip(args.text, sources, outputs), 1):
        for note in check_input(text, run.src_vocab, run.train_config):
            print(f"warning: TEXT {number}: {note.message}; its translation is a guess", file=sys.stderr)
        print(f"{tsv_field(text)}\t{tsv_field(run.tgt_vocab.decode(out))}")
        if not args.show_attention:
            continue
        from seqlab.seq2seq.config import BOS_ID

        with torch.no_grad():
            src_t = torch.tensor([src], device=args.device)
            tgt_t = torch.tensor([[BOS_ID, *out]], device=args.device)
            maps = run.model.attention_maps(src_t, tgt_t)
        if not maps:
            print(f"  ({run.model.config.arch} has no attention: the decoder sees only the encoder's final state)")
            continue
        rows = _token_labels(run.tgt_vocab, out) + ["</s>"]
        columns = _token_labels(run.src_vocab, src)
        for layer, weights in enumerate(maps):
            mean = weights[0].float().mean(0)  # average over heads: (T, S)
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
    ev.add_argument("--device", default="cpu")
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
    from seqlab.seq2seq.train import evaluate_translations, is_text_task, load_pairs, load_run

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
                                       with_bleu=with_bleu, device=args.device)
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
        from seqlab.seq2seq.train import read_vocabs
        from seqlab.seq2seq.train_config import Seq2SeqTrainConfig

        run = Path(args.run)
        config_path = run / "config.json"
        if not config_path.is_file():
            raise FileNotFoundError(f"{config_path} does not exist: is {run} a run of `seqlab seq2seq train`?")
        try:
            saved = json.loads(config_path.read_text(encoding="utf-8"))["train"]
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{config_path} is not the config.json of a seq2seq run ({error})") from None
        cfg = Seq2SeqTrainConfig.from_dict(saved, source=str(config_path))
        src_vocab, tgt_vocab = read_vocabs(run / "vocab.json")
    except (FileNotFoundError, ValueError) as error:
        return _error(str(error), 2)
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
