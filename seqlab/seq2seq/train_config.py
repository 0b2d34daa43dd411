"""The settings of one ``seqlab seq2seq train`` run, as a dataclass validated up front.

Standard library only, so the CLI can show the defaults in ``--help`` without importing torch.
The model fields (``d_model``, ``norm``, ...) take their defaults from
:class:`seqlab.seq2seq.config.Seq2SeqConfig`; ``layers`` sets both the encoder and decoder depth.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from seqlab.seq2seq.config import Seq2SeqConfig
from seqlab.seq2seq.tasks import DEFAULT_LENGTHS, SYMBOL_TASKS, check_task

MODEL_DEFAULTS = {f.name: f.default for f in fields(Seq2SeqConfig)}
# Seq2SeqTrainConfig fields passed to Seq2SeqConfig under the same name
MODEL_FIELDS = ("arch", "d_model", "num_heads", "d_ff", "norm", "norm_position", "positional", "ffn", "cell",
                "attention_score", "tie_output")


@dataclass
class Seq2SeqTrainConfig:
    """Everything ``seqlab seq2seq train`` needs; flags and config.json use these names."""

    out_dir: str = "runs/seq2seq"
    # data: a built-in task or a TSV file
    task: str | None = "dates"
    pairs: str | None = None
    skip_bad_lines: bool = False
    tokenize: str = "char"                 # char | bpe
    tokenizer: str | None = None           # BPE tokenizer directory (default: train one on the pairs)
    bpe_vocab_size: int = 2000
    train_size: int = 20000                # built-in tasks: training pairs
    valid_size: int = 500                  # built-in tasks: validation pairs (sources unseen in training)
    valid_fraction: float = 0.05           # --pairs: share held out for validation
    min_len: int | None = None             # symbol tasks: source lengths (default 1..12)
    max_len: int | None = None
    # model: the Seq2SeqConfig fields of the same names, with its defaults
    arch: str = "transformer"
    d_model: int = MODEL_DEFAULTS["d_model"]
    num_heads: int = MODEL_DEFAULTS["num_heads"]
    layers: int = MODEL_DEFAULTS["num_encoder_layers"]  # encoder and decoder layers (RNN: stacked layers)
    d_ff: int | None = MODEL_DEFAULTS["d_ff"]
    max_seq_len: int | None = None         # default: the longest example + 8
    norm: str = MODEL_DEFAULTS["norm"]
    norm_position: str = MODEL_DEFAULTS["norm_position"]
    positional: str = MODEL_DEFAULTS["positional"]
    ffn: str = MODEL_DEFAULTS["ffn"]
    cell: str = MODEL_DEFAULTS["cell"]
    attention_score: str = MODEL_DEFAULTS["attention_score"]
    tie_output: bool = MODEL_DEFAULTS["tie_output"]
    # optimisation
    steps: int = 2000
    batch_size: int = 64
    lr: float = 3e-3
    min_lr: float | None = None            # default lr / 10
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    # evaluation, checkpoints, stopping
    eval_interval: int = 250
    eval_size: int = 500                   # validation pairs decoded at each evaluation
    checkpoint_interval: int = 500
    target_exact_match: float | None = None  # stop once validation exact match reaches this
    max_minutes: float | None = None         # stop (and save) after this much training time
    # system
    seed: int = 0
    device: str = "auto"
    threads: int | None = None
    progress: bool = True
    resume: bool = False
    overwrite: bool = False

    def __post_init__(self) -> None:
        if (self.task is None) == (self.pairs is None):
            raise ValueError("give exactly one data source: --task NAME or --pairs FILE.tsv")
        if self.task is not None:
            check_task(self.task)
        if self.tokenize not in ("char", "bpe"):
            raise ValueError(f"tokenize must be 'char' or 'bpe', got {self.tokenize!r}")
        if (self.min_len is not None or self.max_len is not None) and self.task not in SYMBOL_TASKS:
            raise ValueError(f"--min-len/--max-len apply to the symbol tasks ({', '.join(SYMBOL_TASKS)})")
        for name in ("steps", "batch_size", "eval_interval", "eval_size", "checkpoint_interval", "train_size",
                     "valid_size", "d_model", "num_heads", "layers", "bpe_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not 0 < self.valid_fraction < 1:
            raise ValueError(f"valid_fraction must be in (0, 1), got {self.valid_fraction}")
        if not self.lr > 0 or self.warmup_steps < 0 or self.grad_clip < 0 or self.weight_decay < 0:
            raise ValueError("need lr > 0, warmup_steps >= 0, grad_clip >= 0 and weight_decay >= 0")
        if self.target_exact_match is not None and not 0 < self.target_exact_match <= 1:
            raise ValueError(f"target_exact_match must be in (0, 1], got {self.target_exact_match}")
        if self.max_minutes is not None and not self.max_minutes > 0:
            raise ValueError(f"max_minutes must be > 0, got {self.max_minutes}")

    @property
    def lengths(self) -> tuple[int, int] | None:
        if self.task not in SYMBOL_TASKS or (self.min_len is None and self.max_len is None):
            return None
        low = self.min_len if self.min_len is not None else DEFAULT_LENGTHS[0]
        return low, self.max_len if self.max_len is not None else max(low, DEFAULT_LENGTHS[1])

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, source: str = "config") -> Seq2SeqTrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{source}: unknown setting(s) {', '.join(unknown)}")
        return cls(**values)
