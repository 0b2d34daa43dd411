"""The two kinds of run and the one vocabulary of words about them: what each is called, which
command trains it, which commands use it, which files only it has, and the words of its progress
bar, start line and plot title. Standard library only (``cli.py`` modules read it before torch).

    >>> Kind("seq2seq") is Kind.SEQ2SEQ, Kind.LM == "lm"
    (True, True)
    >>> KINDS[Kind.LM].train_command
    'seqlab train'
    >>> KINDS[Kind.SEQ2SEQ].resume_hint.format(run="runs/dates")
    'continue it with `seqlab seq2seq train --resume --out runs/dates`'

A task gives facts (its model's name, its data, how many examples); the texts here put them into
words, so no task holds presentation strings:

    >>> KINDS[Kind.SEQ2SEQ].progress_label.format(model="transformer")
    'seq2seq transformer'
    >>> describe_metrics({"val_loss": 0.03125, "val_exact_match": 0.996})
    'val loss 0.0312, exact match 99.6%'
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


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
