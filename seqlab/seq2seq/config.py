"""Sequence-to-sequence hyperparameters as one dataclass, validated up front, plus the special ids.

Every seq2seq vocabulary (characters or BPE) reserves the first four ids:

    PAD_ID = 0   padding, never attended to, never predicted
    BOS_ID = 1   the decoder's first input ("begin of sequence")
    EOS_ID = 2   the decoder's last target: generation stops when it is produced
    UNK_ID = 3   a symbol the vocabulary does not know

Example: the target "2026" with digits at ids 4..13 is trained as
decoder input  [BOS, '2', '0', '2', '6']  ->  decoder target  ['2', '0', '2', '6', EOS].

`asdict(config)` is stored in checkpoints as ``model_config`` and `Seq2SeqConfig.from_dict(d)` rebuilds it
(also from the names seqlab 0.1.0 saved: ``max_seq_len`` and ``tie_output``, see seqlab.settings.OLD_NAMES).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from typing import Any

from seqlab.model.config import ATTENTIONS, NORMS as ALL_NORMS, default_d_ff
from seqlab.settings import field_old_names

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
NUM_SPECIAL_IDS = 4

ARCHS = ("rnn", "rnn-attention", "transformer")
NORMS = tuple(name for name in ALL_NORMS if name != "none")  # the seq2seq subset of the one list of norms
NORM_POSITIONS = ("post", "pre")
POSITIONALS = ("sinusoidal", "learned", "rope")
FFNS = ("relu", "swiglu")
CELLS = ("gru", "lstm", "rnn")
ATTENTION_SCORES = ("dot", "additive")
GRU_RESETS = ("after", "before")


def _choices(values: tuple[str, ...]) -> str:
    return " | ".join(values)


def _field(default: Any, help: str, **metadata: Any) -> Any:
    """A Seq2SeqConfig field with the help text (choices, and ``setting_default`` where a training run's
    default differs) of its ``seqlab seq2seq train`` setting (seqlab.model.config.model_setting_fields)."""
    return field(default=default, metadata={"help": help, **metadata})


@dataclass
class Seq2SeqConfig:
    """Hyperparameters of the three encoder-decoder architectures (their only declaration: each field's
    metadata is also its ``seqlab seq2seq train`` setting's help, choices and, where a run's default
    differs, ``setting_default``; arch defaults to "transformer" there, context_length to the data's).

    arch                 "rnn" (context bottleneck), "rnn-attention", or "transformer"
    d_model              embedding size; also the RNN hidden size
    num_heads            attention heads (Transformer only)
    num_encoder_layers   Transformer encoder layers / stacked RNN layers of the encoder
    num_decoder_layers   Transformer decoder layers / stacked RNN layers of the decoder
    d_ff                 feed-forward width; None = 4 * d_model (relu) or ~8/3 * d_model (swiglu)
    context_length       longest source or target the position tables cover (Transformer)
    norm, norm_position, positional, ffn   Transformer options (see TransformerSeq2Seq)
    cell                 recurrent cell of the RNN models: "gru", "lstm" or "rnn" (tanh)
    attention_score      RNN attention: "dot" (scaled dot product) or "additive" (Bahdanau)
    gru_reset            GRU cells: reset gate applied "after" the hidden matmul (PyTorch) or
                         "before" it (paper/d2l); saved with the model so a checkpoint rebuilds it
    shared_embeddings    one embedding table for source and target (needs equal vocab sizes)
    tie_embeddings       the output layer reuses the target embedding matrix
    attention            Transformer attention backend, as the LM's (seqlab.model.config.ATTENTIONS:
                         auto | reference | chunked | sdpa | flash); how, not what: no weights
                         (checkpoints written before the field existed read as "auto")
    """

    arch: str = field(metadata={"help": _choices(ARCHS), "choices": ARCHS, "setting_default": "transformer"})
    src_vocab_size: int = field(metadata={"help": "source vocabulary size, special ids included"})
    tgt_vocab_size: int = field(metadata={"help": "target vocabulary size, special ids included"})
    d_model: int = _field(64, "embedding (and RNN hidden) size")
    num_heads: int = _field(4, "attention heads (Transformer)")
    num_encoder_layers: int = _field(2, "encoder layers (RNN: stacked layers)")
    num_decoder_layers: int = _field(2, "decoder layers (RNN: stacked layers)")
    d_ff: int | None = _field(None, "feed-forward width (default: 4 d_model for relu, 8/3 d_model for swiglu)")
    context_length: int = _field(64, "longest source or target in tokens, the model's position table (default: the "
                                     "longest example + 8)", setting_default=None)
    norm: str = _field("layernorm", _choices(NORMS), choices=NORMS)
    norm_position: str = _field("post", _choices(NORM_POSITIONS), choices=NORM_POSITIONS)
    positional: str = _field("sinusoidal", _choices(POSITIONALS), choices=POSITIONALS)
    ffn: str = _field("relu", _choices(FFNS), choices=FFNS)
    cell: str = _field("gru", f"RNN cell: {_choices(CELLS)}", choices=CELLS)
    attention_score: str = _field("dot", f"rnn-attention scoring: {_choices(ATTENTION_SCORES)}",
                                  choices=ATTENTION_SCORES)
    gru_reset: str = _field("after", f"GRU reset gate: {_choices(GRU_RESETS)}", choices=GRU_RESETS)
    shared_embeddings: bool = _field(False, "one embedding table for source and target (equal vocabulary sizes)")
    tie_embeddings: bool = _field(False, "output layer reuses the target embeddings")
    attention: str = _field("auto", f"Transformer attention backend: {_choices(ATTENTIONS)}, as for `seqlab train` "
                                    "(flash falls back to auto's choice wherever a padding mask is given); not part "
                                    "of the weights, so a resumed run may change it", choices=ATTENTIONS)

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("arch", self.arch, ARCHS),
            ("norm", self.norm, NORMS),
            ("norm_position", self.norm_position, NORM_POSITIONS),
            ("positional", self.positional, POSITIONALS),
            ("ffn", self.ffn, FFNS),
            ("cell", self.cell, CELLS),
            ("attention_score", self.attention_score, ATTENTION_SCORES),
            ("gru_reset", self.gru_reset, GRU_RESETS),
            ("attention", self.attention, ATTENTIONS),
        ):
            if value not in allowed:
                raise ValueError(f"Seq2SeqConfig.{name} must be one of {allowed}, got {value!r}")
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "num_heads", "num_encoder_layers",
                     "num_decoder_layers", "context_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"Seq2SeqConfig.{name} must be a positive integer, got {value!r}")
        for name in ("src_vocab_size", "tgt_vocab_size"):
            if getattr(self, name) <= NUM_SPECIAL_IDS:
                raise ValueError(
                    f"Seq2SeqConfig.{name} = {getattr(self, name)} leaves no room for symbols: ids "
                    f"0..{NUM_SPECIAL_IDS - 1} are PAD, BOS, EOS, UNK"
                )
        if self.d_ff is not None and (isinstance(self.d_ff, bool) or not isinstance(self.d_ff, int)
                                      or self.d_ff <= 0):
            raise ValueError(f"Seq2SeqConfig.d_ff must be a positive integer or None, got {self.d_ff!r}")
        for name in ("shared_embeddings", "tie_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Seq2SeqConfig.{name} must be True or False, got {getattr(self, name)!r}")
        if self.shared_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                f"Seq2SeqConfig.shared_embeddings needs src_vocab_size == tgt_vocab_size, got "
                f"{self.src_vocab_size} and {self.tgt_vocab_size}; build one joint vocabulary or "
                "set shared_embeddings=False"
            )
        if self.arch == "transformer":
            if self.d_model % self.num_heads != 0:
                raise ValueError(
                    f"Seq2SeqConfig.d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})"
                )
            if self.positional == "rope" and (self.d_model // self.num_heads) % 2 != 0:
                raise ValueError(
                    f"Seq2SeqConfig.positional='rope' needs an even head size, got d_model/num_heads = "
                    f"{self.d_model // self.num_heads}"
                )
            if self.positional == "sinusoidal" and self.d_model % 2 != 0:
                raise ValueError(f"Seq2SeqConfig.d_model must be even for sinusoidal positions, got {self.d_model}")

    @property
    def resolved_d_ff(self) -> int:
        """d_ff, or its default for the chosen feed-forward: 4 * d_model (relu), ~8/3 * d_model (swiglu)."""
        return default_d_ff(self.d_model, self.ffn) if self.d_ff is None else self.d_ff

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, source: str = "model config",
                  notes: list[str] | None = None) -> "Seq2SeqConfig":
        """A Seq2SeqConfig from a dict of its fields (a checkpoint's ``model_config``); the old names
        (seqlab.settings.OLD_NAMES: max_seq_len, tie_output) are read with a note (in ``notes``, else a
        warning); unknown fields name ``source``.

        Example: ``Seq2SeqConfig.from_dict({"arch": "rnn", ..., "max_seq_len": 20})`` has
        ``context_length == 20`` and notes "model config: max_seq_len is now context_length"."""
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a dict of Seq2SeqConfig fields, got {type(values).__name__}")
        renamed: dict[str, Any] = {}
        old_names = field_old_names({f.name for f in fields(cls)})  # max_seq_len, tie_output
        for key, value in values.items():
            new = old_names.get(key, key)
            if new != key:
                if new in values:
                    raise ValueError(f"{source}: {new} is given twice (once under its old name {key})")
                note = f"{source}: {key} is now {new} (the name seqlab 0.1.0 saved; read as {new})"
                if notes is None:
                    warnings.warn(note, UserWarning, stacklevel=2)
                else:
                    notes.append(note)
            renamed[new] = value
        known = [f.name for f in fields(cls)]
        unknown = [key for key in renamed if key not in known]
        if unknown:
            raise ValueError(f"{source}: unknown seq2seq model config field(s) {', '.join(map(repr, unknown))}; "
                             f"this seqlab knows {', '.join(known)} (a newer seqlab may have written it)")
        try:
            return cls(**renamed)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{source}: {error}") from None
