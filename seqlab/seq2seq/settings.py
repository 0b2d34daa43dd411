"""The settings of one ``seqlab seq2seq train`` run, as a dataclass validated up front.

They extend :class:`seqlab.settings.EngineSettings`, so both training commands share one
vocabulary of names and flags (``max_steps``, ``num_layers``, ``context_length``,
``time_budget_s``, ``--out``, ``--precision``, ...); flags, TOML keys and config.json come from
the fields below. Old names (``steps``, ``layers``, ``max_seq_len``, ``tie_output``,
``max_minutes``, ``eval_size``) are read with a note, from :data:`seqlab.settings.OLD_NAMES`.

``eval_batches``: each evaluation scores the first ``eval_batches`` x (global batch) validation
pairs: loss, accuracy, exact match (and BLEU for text). With the defaults 8 x 64 = 512 >= 500.

    Seq2SeqTrainConfig.from_dict({"task": "dates", "steps": 300}).max_steps   # 300, with a note

Standard library only, so ``--help`` shows the defaults without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from seqlab.model.config import model_setting_fields
from seqlab.seq2seq.builtin_tasks import (
    DEFAULT_LENGTHS,
    SYMBOL_TASKS,
    TASKS,
    check_task,
)
from seqlab.seq2seq.config import Seq2SeqConfig
from seqlab.settings import EngineSettings, again, setting

# Seq2SeqConfig fields that are no settings of a run: the vocabularies come from the data, num_layers
# sets both layer counts, and the rest keep their model defaults
NOT_SETTINGS = ("src_vocab_size", "tgt_vocab_size", "num_encoder_layers", "num_decoder_layers", "gru_reset",
                "shared_embeddings")
_LAYERS_DEFAULT = Seq2SeqConfig.__dataclass_fields__["num_encoder_layers"].default
# Seq2SeqTrainConfig fields passed to Seq2SeqConfig under the same name and fixed on resume (context_length
# is the data's when unset; attention is how, not what, and may change on resume)
MODEL_FIELDS = tuple(f.name for f in fields(Seq2SeqConfig) if f.name not in (*NOT_SETTINGS, "context_length",
                                                                              "attention"))
# what a resumed run cannot change: its data and its model (the checkpoint was trained on them)
FIXED_ON_RESUME = ("task", "tokenize", "tokenizer", "bpe_vocab_size", "train_size", "valid_size", "valid_fraction",
                   "min_len", "max_len", "seed", "num_layers", "context_length", *MODEL_FIELDS)


# settings that only one kind of model (or tokenizer) reads: given for another, they would be ignored
USED_ONLY_BY: dict[str, tuple[str, tuple[str, ...]]] = {
    **{name: ("arch", ("transformer",)) for name in ("num_heads", "d_ff", "norm", "norm_position", "positional",
                                                     "ffn", "attention")},
    "cell": ("arch", ("rnn", "rnn-attention")),
    "attention_score": ("arch", ("rnn-attention",)),
    "bpe_vocab_size": ("tokenize", ("bpe",)),
}


def refuse_unused(values: dict[str, Any], flags: dict[str, Any]) -> None:
    """Refuse a setting given (as a flag or in the TOML file) that the chosen model or tokenizer never
    reads, instead of ignoring it silently: ``--num-heads 8 --arch rnn`` trains an RNN without heads.

    >>> refuse_unused({"arch": "rnn", "cell": "lstm"}, {})
    >>> refuse_unused({"arch": "rnn", "num_heads": 8}, {"num_heads": 8})
    Traceback (most recent call last):
    ...
    ValueError: --num-heads 8 is read only with --arch transformer (with --arch rnn it would be ignored); drop --num-heads or choose --arch transformer
    """
    for name, (chooser, users) in USED_ONLY_BY.items():
        if name not in values:
            continue
        chosen = values.get(chooser, Seq2SeqTrainConfig.__dataclass_fields__[chooser].default)
        if chosen in users:
            continue
        given = f"--{name.replace('_', '-')}" if name in flags else f"{name} (in the --config file)"
        flag = f"--{chooser.replace('_', '-')}"
        raise ValueError(f"{given} {values[name]} is read only with {flag} {' or '.join(users)} (with {flag} "
                         f"{chosen} it would be ignored); drop {given.split()[0]} or choose {flag} {users[0]}")
    if values.get("tokenizer") is not None and "bpe_vocab_size" in values:
        raise ValueError(f"--bpe-vocab-size {values['bpe_vocab_size']} sizes a BPE trained on the pairs; with "
                         f"--tokenizer {values['tokenizer']} the tokenizer's own vocabulary is used (it would be "
                         "ignored); drop one of the two")


def _choices(values: tuple[str, ...]) -> str:
    return " | ".join(values)


@dataclass
@model_setting_fields(Seq2SeqConfig, "model", skip=NOT_SETTINGS, among={"num_layers": "num_heads"})
class Seq2SeqTrainConfig(EngineSettings):
    """Everything ``seqlab seq2seq train`` needs; flags and config.json use these names."""

    out_dir: str = again(EngineSettings, "out_dir", "runs/seq2seq")
    # data: a built-in task or a TSV file
    task: str | None = setting("dates", "data", f"built-in generated task: {_choices(TASKS)}", choices=TASKS)
    pairs: str | None = setting(None, "data", "source<TAB>target lines (Tatoeba/Anki export format); "
                                              "replaces --task")
    skip_bad_lines: bool = setting(False, "data", "leave out (and list) unusable lines of --pairs")
    tokenize: str = setting("char", "data", "characters or byte-level BPE: char | bpe", choices=("char", "bpe"))
    tokenizer: str | None = setting(None, "data", "with --tokenize bpe: a BPE tokenizer directory "
                                                  "(default: train one on the pairs)")
    bpe_vocab_size: int = setting(2000, "data", "size of a BPE trained on the pairs")
    train_size: int = setting(20000, "data", "built-in task: training pairs")
    valid_size: int = setting(500, "data", "built-in task: validation pairs (sources unseen in training)")
    valid_fraction: float = setting(0.05, "data", "--pairs: share held out for validation")
    min_len: int | None = setting(None, "data", f"copy/reverse/sort: shortest source (default: {DEFAULT_LENGTHS[0]})")
    max_len: int | None = setting(None, "data", f"copy/reverse/sort: longest source (default: {DEFAULT_LENGTHS[1]})")
    # model: every other setting of this section is a Seq2SeqConfig field (model_setting_fields above);
    # num_layers is a setting of its own, made into both num_encoder_layers and num_decoder_layers
    num_layers: int = setting(_LAYERS_DEFAULT, "model", "encoder and decoder layers (RNN: stacked layers)")
    # the engine's settings, with this task's defaults
    beta2: float = again(EngineSettings, "beta2", 0.98)
    weight_decay: float = again(EngineSettings, "weight_decay", 0.01)
    batch_size: int = again(EngineSettings, "batch_size", 64, help="pairs per micro-batch per process")
    max_steps: int | None = again(EngineSettings, "max_steps", 2000)
    eval_interval: int = again(EngineSettings, "eval_interval", 250)
    eval_batches: int = again(EngineSettings, "eval_batches", 8,
                              help="validation batches per evaluation: the first eval_batches x (global batch) "
                                   "validation pairs are scored (all of them when fewer)")
    target_exact_match: float | None = setting(None, "eval", "stop once validation exact match reaches this (0-1]")

    POSITIVE: ClassVar[tuple[str, ...]] = (*EngineSettings.POSITIVE, "d_model", "num_heads", "num_layers",
                                           "train_size", "valid_size", "bpe_vocab_size", "context_length")
    OLD: ClassVar[tuple[str, ...]] = ("steps", "layers", "max_seq_len", "tie_output", "max_minutes", "eval_size")

    def validate(self) -> None:
        if (self.task is None) == (self.pairs is None):
            raise ValueError("give exactly one data source: --task NAME or --pairs FILE.tsv")
        if self.task is not None:
            check_task(self.task)
        super().validate()
        if self.max_steps is None:
            raise ValueError("config: set max_steps")
        if (self.min_len is not None or self.max_len is not None) and self.task not in SYMBOL_TASKS:
            raise ValueError(f"--min-len/--max-len apply to the symbol tasks ({', '.join(SYMBOL_TASKS)})")
        if self.tokenizer is not None and self.tokenize != "bpe":
            raise ValueError(f"--tokenizer {self.tokenizer} is a BPE tokenizer, used only with --tokenize bpe "
                             f"(with --tokenize {self.tokenize} it would be ignored); add --tokenize bpe or drop "
                             "--tokenizer")
        if not 0 < self.valid_fraction < 1:
            raise ValueError(f"config valid_fraction={self.valid_fraction}: must be in (0, 1)")
        if self.target_exact_match is not None and not 0 < self.target_exact_match <= 1:
            raise ValueError(f"config target_exact_match={self.target_exact_match}: must be in (0, 1]")

    @property
    def lengths(self) -> tuple[int, int] | None:
        if self.task not in SYMBOL_TASKS or (self.min_len is None and self.max_len is None):
            return None
        low = self.min_len if self.min_len is not None else DEFAULT_LENGTHS[0]
        return low, self.max_len if self.max_len is not None else max(low, DEFAULT_LENGTHS[1])

    def model_config(self, src_vocab_size: int, tgt_vocab_size: int, context_length: int) -> Seq2SeqConfig:
        """The :class:`Seq2SeqConfig` this run trains (``num_layers`` encoder and decoder layers)."""
        return Seq2SeqConfig(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, context_length=context_length,
                             num_encoder_layers=self.num_layers, num_decoder_layers=self.num_layers,
                             attention=self.attention, **{name: getattr(self, name) for name in MODEL_FIELDS})

    # -- resolve_settings hooks --------------------------------------------------------
    @classmethod
    def adjust_given(cls, values: dict[str, Any], flags: dict[str, Any]) -> None:
        if "pairs" in values and "task" not in values:
            values["task"] = None  # --pairs replaces the default task
        if not values.get("resume"):  # a resumed run's arch is in its config.json, and its model is fixed
            refuse_unused(values, flags)

    @classmethod
    def saved_settings(cls, out_dir: Path, notes: list[str]) -> dict[str, Any]:
        """The settings in the run's config.json, under the flags of a ``--resume``. A language-model
        run, a missing file or one of the wrong shape is a message naming it."""
        from seqlab.runs.kinds import check_kind

        path = out_dir / "config.json"
        if not path.is_file():
            raise FileNotFoundError(f"--resume: {path} does not exist (nothing to resume in {out_dir})")
        check_kind(out_dir, "seq2seq", "resume")
        return cls.from_run(out_dir, notes).to_dict()

    @classmethod
    def from_run(cls, run: str | Path, notes: list[str] | None = None) -> "Seq2SeqTrainConfig":
        """The settings of the seq2seq run ``run`` (its config.json, whichever seqlab wrote it; old
        names and an old layout are read with a note in ``notes``)."""
        from seqlab.runs.config import read_run_config

        saved = read_run_config(run)
        if notes is not None:
            notes.extend(saved.notes)
        return cls.from_saved(saved.settings, source=str(Path(run) / "config.json"), key_prefix=saved.settings_at,
                              notes=notes)
