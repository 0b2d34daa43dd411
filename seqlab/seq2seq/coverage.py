"""What a seq2seq run was trained on, and whether an input lies inside it.

A model translates anything with the same confidence, in its training or not. :func:`check_input`
notes characters outside the source vocabulary, words or sentences outside the ``fr-en`` grammar,
dates in none of the ``dates`` formats, symbol strings outside the trained lengths;
:func:`known_inputs` lists what the run covers (``seqlab seq2seq vocab``)::

    >>> from seqlab.seq2seq.vocab import CharVocab
    >>> from seqlab.seq2seq.settings import Seq2SeqTrainConfig
    >>> cfg = Seq2SeqTrainConfig(task="fr-en")
    >>> vocab = CharVocab.from_texts(["le chat noir dort"])
    >>> [note.message for note in check_input("le petit chat dort", vocab, cfg)]
    ["'p' is not in the run's source vocabulary (it becomes UNK)", "'petit' is not a word of the fr-en grammar the model learnt (`seqlab seq2seq vocab` lists them)"]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seqlab.seq2seq.builtin_tasks import (
    DEFAULT_LENGTHS,
    SYMBOL_TASKS,
    SYMBOLS,
    date_formats,
    date_in_task,
    fr_en_translation,
    fr_en_words,
    french_words,
)
from seqlab.seq2seq.config import UNK_ID

# the worked example each built-in task opens with (the explorer's translate panel)
TASK_EXAMPLES = {"dates": "Sunday 29th of November 2026", "fr-en": "la vache blanche a vu un chien"}
SYMBOL_EXAMPLE = "cadbgefhji"  # cut to a trained length


@dataclass(frozen=True)
class InputNote:
    """One way an input lies outside the run's training: ``code`` and ``params`` name it for a
    translated message (the explorer's ``note.<code>``), ``message`` says it in English."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)
    message: str = ""


def trained_lengths(cfg) -> tuple[int, int]:
    """The source lengths a symbol task trained on."""
    return cfg.lengths or DEFAULT_LENGTHS


def check_input(text: str, src_vocab, cfg) -> list[InputNote]:
    """The notes for ``text`` given to a run with source vocabulary ``src_vocab`` and training
    settings ``cfg`` (a Seq2SeqTrainConfig); [] when nothing is known to be outside its training."""
    notes = []
    unknown = "".join(dict.fromkeys(c for c in text if src_vocab.encode(c) == [UNK_ID]))
    if unknown:
        shown = ", ".join(repr(c) for c in unknown)
        verb, becomes = ("is", "it becomes") if len(unknown) == 1 else ("are", "they become")
        notes.append(InputNote("unknown_chars", {"chars": " ".join(unknown)},
                               f"{shown} {verb} not in the run's source vocabulary ({becomes} UNK)"))
    task = cfg.task
    if task == "fr-en":
        words = fr_en_words()
        strangers = list(dict.fromkeys(w for w in french_words(text) if w not in words))
        if strangers:
            shown = ", ".join(repr(w) for w in strangers)
            verb = "is not a word" if len(strangers) == 1 else "are not words"
            notes.append(InputNote("unknown_words", {"words": " ".join(strangers)},
                                   f"{shown} {verb} of the fr-en grammar the model learnt "
                                   "(`seqlab seq2seq vocab` lists them)"))
        elif fr_en_translation(text) is None:
            notes.append(InputNote("not_in_grammar", {},
                                   "every word is in the fr-en grammar, but the sentence is not one it makes "
                                   "(determiner + noun + adjective after it, a verb agreeing with the subject, "
                                   "an object only after voit/aime/suit)"))
    elif task == "dates":
        if date_in_task(text) is None:
            notes.append(InputNote("not_a_task_date", {"example": TASK_EXAMPLES["dates"]},
                                   "this is not a date between 1900 and 2099 in one of the dates task's formats "
                                   "(`seqlab seq2seq vocab` lists them)"))
    elif task in SYMBOL_TASKS:
        low, high = trained_lengths(cfg)
        if not low <= len(text) <= high:
            notes.append(InputNote("length_outside", {"n": len(text), "lo": low, "hi": high},
                                   f"the text is {len(text)} symbols long; the model trained on {low} to {high}"))
    return notes


def example_source(cfg) -> str:
    """A source the run was trained to translate, to open the explorer with: the task's worked
    example, or the first source of the run's pairs file ("" when it cannot be read)."""
    if cfg.task in TASK_EXAMPLES:
        return TASK_EXAMPLES[cfg.task]
    if cfg.task in SYMBOL_TASKS:
        low, high = trained_lengths(cfg)
        length = max(low, min(high, 6))
        return (SYMBOL_EXAMPLE * (length // len(SYMBOL_EXAMPLE) + 1))[:length]
    try:
        with open(cfg.pairs, encoding="utf-8") as handle:
            for line in handle:
                source = line.removeprefix("\ufeff").split("\t", 1)[0].strip()
                if source and "\t" in line:
                    return source
    except (OSError, TypeError, UnicodeDecodeError):
        pass
    return ""


def known_inputs(cfg, src_vocab, tgt_vocab) -> dict[str, Any]:
    """What the run knows, as plain data: its task or pairs file, vocabulary kind and sizes, the
    source and target characters (character runs), and per task: the fr-en grammar's words with
    their English, the date formats, or the symbols and trained lengths."""
    info: dict[str, Any] = {"task": cfg.task, "pairs": cfg.pairs, "kind": src_vocab.kind,
                            "source_size": src_vocab.size, "target_size": tgt_vocab.size}
    if src_vocab.kind == "char":
        info["source_chars"] = list(src_vocab.chars)
        info["target_chars"] = list(tgt_vocab.chars)
    if cfg.task == "fr-en":
        info["words"] = fr_en_words()
    elif cfg.task == "dates":
        info["formats"] = date_formats()
        info["years"] = [1900, 2099]
    elif cfg.task in SYMBOL_TASKS:
        info["symbols"] = SYMBOLS
        info["lengths"] = list(trained_lengths(cfg))
    return info
