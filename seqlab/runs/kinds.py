"""The two kinds of run and the one vocabulary of words about them: names, the command that trains
each, the commands that use it, its own files, and the words of its progress bar, start line and
plot title (tasks give facts; these texts put them into words). Standard library only.

    >>> Kind("seq2seq") is Kind.SEQ2SEQ, Kind.LM == "lm"
    (True, True)
    >>> KINDS[Kind.SEQ2SEQ].resume_hint.format(run="runs/dates")
    'continue it with `seqlab seq2seq train --resume --out runs/dates`'

A run's kind (:func:`run_kind`) is config.json's "kind" (:func:`config_kind`, which also tells the
kind of seqlab 0.1.0's files that lack it, for :mod:`seqlab.runs.config`), else its files:
``tokenizer/`` for a language model, ``vocab.json`` for seq2seq. :func:`check_kind` turns a run of
the wrong kind into a :class:`RunKindError` naming the command that fits it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any


# the names in a run directory (seqlab.runs.directory reads and writes them)
TOKENIZER_DIR, VOCAB_FILE, CONFIG_FILE = "tokenizer", "vocab.json", "config.json"
CHECKPOINTS_DIR = "checkpoints"


class Kind(str, Enum):
    """A ``str`` enum: ``Kind.LM == "lm"``, and JSON writes its value."""

    LM = "lm"
    SEQ2SEQ = "seq2seq"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class KindText:
    run: str              # "a language-model run"
    model: str            # "a language model"
    train_command: str    # the command that trains it
    made_by: str          # the commands that make one, for "needs a run of ..."
    resume_hint: str      # how to continue one ({run})
    use_hint: str         # how to use one ({run})
    files: tuple[str, ...]  # what only this kind of run holds (removed when the other kind overwrites it)
    progress_label: str   # the progress bar's label ({model})
    plot_title: str       # loss_curve.png's title ({run_name}, {model}, {data}, {parameters})
    start_details: str    # added to the start line ({model}, {data}, {examples})
    step_size: str        # what one optimizer step holds ({tokens}, {rows})
    out_flag: str = "--out"

    @property
    def description(self) -> str:
        """"a seq2seq run (written by `seqlab seq2seq train`)"."""
        return f"{self.run} (written by `{self.train_command}`)"


KINDS: dict[Kind, KindText] = {
    Kind.LM: KindText(
        run="a language-model run", model="a language model", train_command="seqlab train",
        made_by="`seqlab train` or `seqlab demo`",
        resume_hint="continue it with `seqlab train --resume --out {run}`",
        use_hint="use `seqlab generate --run {run}` or `seqlab eval --run {run}`",
        files=("tokenizer",), progress_label="train", plot_title="{run_name}: {parameters:,} parameters",
        start_details="", step_size="{tokens:,} tokens/step"),
    Kind.SEQ2SEQ: KindText(
        run="a seq2seq run", model="a seq2seq model", train_command="seqlab seq2seq train",
        made_by="`seqlab seq2seq train`",
        resume_hint="continue it with `seqlab seq2seq train --resume --out {run}`",
        use_hint="use `seqlab seq2seq translate --run {run}` or `seqlab seq2seq eval --run {run}`",
        files=("vocab.json",), progress_label="seq2seq {model}",
        plot_title="{model} on {data}: {parameters:,} parameters",
        start_details="{model} on {data}, {examples:,} training pairs",
        step_size="about {tokens:,.0f} target tokens/step"),
}


def describe_metrics(metrics: dict[str, float]) -> str:
    """One line for an evaluation's metrics, e.g. "val loss 1.2345, exact match 99.6%, BLEU 31.2"."""
    parts = [f"val loss {metrics['val_loss']:.4f}"] if "val_loss" in metrics else []
    if "val_exact_match" in metrics:
        parts.append(f"exact match {metrics['val_exact_match']:.1%}")
    if "val_bleu" in metrics:
        parts.append(f"BLEU {metrics['val_bleu']:.1f}")
    return ", ".join(parts)


# The built-in seq2seq tasks' names, held here as data so that messages about a missing run can
# suggest one without importing seqlab.seq2seq (a test checks they equal builtin_tasks.TASKS).
SEQ2SEQ_TASKS = ("copy", "reverse", "sort", "dates", "fr-en")
PURPOSES = ("resume", "use")


class RunKindError(ValueError):
    """A run of one kind was given to a command for the other kind; the message names the command for it."""


def commands_for(kind: Kind | str, run: str) -> str:
    """The commands that use a run of ``kind``, for messages."""
    if Kind(kind) is Kind.LM:
        return (f"`seqlab generate --run {run}` with --prompt TEXT (or `seqlab eval --run {run} --data FILE.npy`, "
                f"`seqlab explore --run {run}`)")
    return f"`seqlab seq2seq translate --run {run}` with TEXT (or `seqlab seq2seq eval --run {run}`)"


def kind_hint(kind: Kind | str, purpose: str, run: str | Path) -> str:
    """What to do with a run of ``kind``: ``purpose`` is "resume" (train it on) or "use" it."""
    text = KINDS[Kind(kind)]
    return (text.resume_hint if purpose == "resume" else text.use_hint).format(run=run)


def config_kind(data: dict[str, Any]) -> Kind | None:
    """The kind a config.json's contents describe: its "kind" key, else (files of seqlab 0.1.0 written
    without it, such as ``TrainConfig.save_json``'s) its shape; None if neither."""
    kind = data.get("kind")
    if kind in (Kind.LM.value, Kind.SEQ2SEQ.value):
        return Kind(kind)
    if "train" in data and "model_config" in data:
        return Kind.SEQ2SEQ
    if "model" in data or "data_dir" in data:
        return Kind.LM
    return None


def run_kind(run: str | os.PathLike) -> Kind | None:
    """The kind of the run at ``run``, None when it holds neither kind (nothing is loaded). ``run`` may
    also be a run's config.json or a checkpoint in its checkpoints/ (the kind of the run holding it)."""
    from seqlab.jsonfile import read_json

    run = Path(run)
    if run.suffix == ".pt" and run.parent.name == CHECKPOINTS_DIR:
        run = run.parent.parent
    elif run.name == CONFIG_FILE and run.is_file():
        run = run.parent
    if not run.is_dir():
        return None
    try:
        kind = config_kind(read_json(run / CONFIG_FILE, expected=dict))
    except (OSError, ValueError):
        kind = None
    if kind is not None:
        return kind
    if (run / TOKENIZER_DIR).is_dir():
        return Kind.LM
    if (run / VOCAB_FILE).is_file():
        return Kind.SEQ2SEQ
    return None


def check_kind(run: str | os.PathLike, kind: Kind | str, purpose: str, *, run_dir: bool = False) -> None:
    """Raise :class:`RunKindError` when ``run`` is a run of the other kind. ``purpose`` is "resume" or
    "use" (the message says how to go on with the run found) or the command that needs ``kind``
    (the message names it and the commands for the run found). With ``run_dir`` (``run`` was given as
    a run directory) a missing ``run`` is a FileNotFoundError saying how to make it. A path whose kind
    cannot be told is left to the loader (its own errors name the file)."""
    kind = Kind(kind)
    if run_dir and not os.path.exists(run):
        checkpoint = os.path.join(run, "checkpoints", "latest.pt")
        raise FileNotFoundError(f"run directory {run} does not exist (so there is no {checkpoint}); "
                                f"{how_to_make(run, kind)}")
    found = run_kind(run)
    if found is None or found is kind:
        return
    if purpose in PURPOSES:
        raise RunKindError(f"{run} is {KINDS[found].description}, not {KINDS[kind].run}; "
                           f"{kind_hint(found, purpose, run)}")
    raise RunKindError(f"{run} is {KINDS[found].description}, not {KINDS[kind].model}: `{purpose}` needs a run "
                       f"of {KINDS[kind].made_by}; for this run use {commands_for(found, str(run))}")


def how_to_make(path: str | os.PathLike, kind: Kind | str | None = None,
                tasks: tuple[str, ...] = SEQ2SEQ_TASKS) -> str:
    """How to make the run a missing ``path`` was meant to be: the ``kind`` the command needs, else a
    directory named after a built-in seq2seq task (runs/dates, runs/fr-en) suggests ``seqlab seq2seq
    train``, others both kinds.

    >>> how_to_make("runs/small", "seq2seq")
    'train it with `seqlab seq2seq train --task TASK --out runs/small` (a seq2seq model; TASK: copy, reverse, sort, dates, fr-en, or --pairs FILE.tsv)'
    """
    kind = Kind(kind) if kind is not None else None
    name = Path(path).name.lower()
    task = next((t for t in tasks if t in name), None)
    if kind is Kind.SEQ2SEQ and task is None:
        return (f"train it with `seqlab seq2seq train --task TASK --out {path}` (a seq2seq model; TASK: "
                f"{', '.join(tasks)}, or --pairs FILE.tsv)")
    if kind is Kind.LM and task is None:
        return f"make it with `seqlab train --out {path}` (or `seqlab demo --fast`, which writes demo_out/run)"
    if task is not None:
        return (f"train it with `seqlab seq2seq train --task {task} --out {path}` (a seq2seq model), or "
                f"make a language model with `seqlab demo --fast` or `seqlab train`")
    return (f"make a language model with `seqlab demo --fast` (writes demo_out/run) or `seqlab train`, or a "
            f"seq2seq model with `seqlab seq2seq train --out {path}`")
