"""Training configuration: one dataclass, filled from defaults, then a TOML file, then flags.

Precedence is ``defaults < TOML < command-line flags``. The TOML file may be flat or use the
section names below (``[model]``, ``[optimizer]``, ...); sections only group keys for the reader,
every key is a field of :class:`TrainConfig`. Unknown keys are an error naming the file and key.

Batch sizes are per process and per micro-batch: one optimizer step sees
``batch_size * grad_accum_steps * world_size`` sequences of ``context_length`` tokens.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from seqlab.cli_types import finite_float
from seqlab.model.config import ATTENTIONS, FFNS, NORM_POSITIONS, NORMS, POSITIONALS, ModelConfig, check_kv_heads

SECTIONS = ("run", "data", "model", "optimizer", "schedule", "eval", "system", "logging")

# Shorthand flags for the ablations of the model, as (flag, field, value).
ABLATION_FLAGS = (
    ("--no-rmsnorm", "norm", "none"),
    ("--post-norm", "norm_position", "post"),
    ("--nope", "positional", "nope"),
    ("--silu-ffn", "ffn", "silu"),
)


def _f(default: Any, section: str, help: str, **kw: Any) -> Any:
    return field(default=default, metadata={"section": section, "help": help, **kw})


@dataclass
class TrainConfig:
    # run
    data_dir: str = _f("", "data", "prepared data directory (train.npy, valid.npy, meta.json, tokenizer/)")
    out_dir: str = _f("runs/run", "run", "run directory (config, checkpoints, log, plot)")
    resume: bool = _f(False, "run", "continue from OUT_DIR/checkpoints/latest.pt")
    overwrite: bool = _f(False, "run", "start over in an OUT_DIR that already holds checkpoints")
    seed: int = _f(0, "run", "seed for initialisation and batch sampling")
    # model shape (vocab_size None = the data's vocabulary size from meta.json)
    vocab_size: int | None = _f(None, "model", "vocabulary size (default: from the data's meta.json)")
    context_length: int = _f(128, "model", "tokens per training sequence")
    d_model: int = _f(128, "model", "model width")
    num_layers: int = _f(4, "model", "Transformer blocks")
    num_heads: int = _f(4, "model", "attention heads")
    num_kv_heads: int | None = _f(None, "model", "key/value heads, dividing num_heads (default: num_heads; "
                                  "fewer = grouped-query attention, 1 = multi-query)")
    tie_embeddings: bool = _f(False, "model", "the output layer reuses the token embedding matrix")
    d_ff: int | None = _f(None, "model", "feed-forward width (default: 8/3 d_model for SwiGLU, 4 d_model for SiLU)")
    rope_theta: float = _f(10000.0, "model", "RoPE base")
    norm_eps: float = _f(1e-5, "model", "RMSNorm epsilon (added to the mean square)")
    norm: str = _f("rmsnorm", "model", " | ".join(NORMS), choices=NORMS)
    norm_position: str = _f("pre", "model", " | ".join(NORM_POSITIONS), choices=NORM_POSITIONS)
    positional: str = _f("rope", "model", " | ".join(POSITIONALS), choices=POSITIONALS)
    ffn: str = _f("swiglu", "model", " | ".join(FFNS), choices=FFNS)
    attention: str = _f("auto", "model", "attention backend: auto (chunked on CPU, reference on CUDA/MPS and "
                        "under --compile) | reference | chunked; not part of the weights", choices=ATTENTIONS)
    # optimizer (AdamW)
    lr: float = _f(3e-3, "optimizer", "peak learning rate")
    min_lr: float | None = _f(None, "optimizer", "final learning rate of the cosine (default: lr / 10)")
    beta1: float = _f(0.9, "optimizer", "AdamW beta1")
    beta2: float = _f(0.95, "optimizer", "AdamW beta2")
    eps: float = _f(1e-8, "optimizer", "AdamW epsilon")
    weight_decay: float = _f(0.1, "optimizer", "decoupled weight decay")
    grad_clip: float = _f(1.0, "optimizer", "global gradient-norm clip (0 = off)")
    # schedule and length
    batch_size: int = _f(32, "schedule", "sequences per micro-batch per process")
    grad_accum_steps: int = _f(1, "schedule", "micro-batches per optimizer step")
    max_steps: int | None = _f(1000, "schedule", "optimizer steps (a --max-steps flag replaces a TOML token_budget)")
    token_budget: int | None = _f(None, "schedule", "train on this many tokens instead of max_steps")
    warmup_steps: int = _f(100, "schedule", "linear warm-up steps, then cosine to min_lr at the last step")
    reschedule: bool = _f(False, "schedule", "with --resume: stretch the cosine to the new length "
                                             "(default: keep the run's original schedule)")
    time_budget_s: float | None = _f(None, "schedule", "stop after this many seconds of training; the cosine "
                                                       "follows elapsed time (max_steps is then a cap)")
    # evaluation and checkpoints
    eval_interval: int = _f(200, "eval", "evaluate every N steps (and at the end)")
    eval_batches: int = _f(10, "eval", "validation batches per evaluation")
    checkpoint_interval: int = _f(500, "eval", "checkpoint every N steps (and at the end)")
    log_interval: int = _f(10, "logging", "write a train-loss line to log.jsonl every N steps")
    # system
    device: str = _f("auto", "system", "auto | cpu | cuda | cuda:N | mps")
    precision: str = _f("auto", "system",
                        "auto (CUDA: bf16, or fp16 + grad scaler before Ampere; else fp32) | fp32 | bf16 | fp16",
                        choices=("auto", "fp32", "bf16", "fp16"))
    compile: bool = _f(False, "system", "torch.compile the model (switched off where unsupported)")
    threads: int | None = _f(None, "system", "torch CPU threads (default: torch's choice)")
    # optional trackers
    wandb: bool = _f(False, "logging", "also log to Weights & Biases (package wandb)")
    wandb_project: str = _f("seqlab", "logging", "W&B project name")
    tensorboard: bool = _f(False, "logging", "also log to TensorBoard (package tensorboard)")
    progress: bool = _f(True, "logging", "show the tqdm progress bar")

    def __post_init__(self) -> None:
        self.validate()

    # -- derived values -------------------------------------------------------------
    def validate(self) -> None:
        for f in fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value not in choices:
                raise ValueError(f"config {f.name}={value!r}: expected one of {', '.join(choices)}")
            if isinstance(value, float) and not math.isfinite(value):  # NaN passes every range check
                raise ValueError(f"config {f.name}={value}: must be a finite number")
        positive = ("context_length", "d_model", "num_layers", "num_heads", "batch_size",
                    "grad_accum_steps", "eval_interval", "eval_batches", "checkpoint_interval",
                    "log_interval")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"config {name}={getattr(self, name)}: must be >= 1")
        if self.num_kv_heads is not None:
            try:
                check_kv_heads(self.num_heads, self.num_kv_heads)
            except ValueError as error:
                raise ValueError(f"config num_kv_heads={self.num_kv_heads}: {error}") from None
        if self.max_steps is None and self.token_budget is None:
            raise ValueError("config: set max_steps or token_budget")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"config max_steps={self.max_steps}: must be >= 1")
        if self.token_budget is not None and self.token_budget < 1:
            raise ValueError(f"config token_budget={self.token_budget}: must be >= 1")
        if self.warmup_steps < 0:
            raise ValueError(f"config warmup_steps={self.warmup_steps}: must be >= 0")
        if self.lr <= 0:
            raise ValueError(f"config lr={self.lr}: must be > 0")
        for name in ("min_lr", "grad_clip", "weight_decay"):  # a negative min_lr would end in gradient ascent
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"config {name}={value}: must be >= 0")
        if self.min_lr is not None and self.min_lr > self.lr:
            raise ValueError(f"config min_lr={self.min_lr} is above lr={self.lr}, so the cosine would rise; "
                             f"give a min_lr <= lr (default lr / 10)")
        if self.time_budget_s is not None and self.time_budget_s <= 0:
            raise ValueError(f"config time_budget_s={self.time_budget_s}: must be > 0")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"config threads={self.threads}: must be >= 1")

    @property
    def final_lr(self) -> float:
        return self.lr / 10 if self.min_lr is None else self.min_lr

    def tokens_per_step(self, world_size: int = 1) -> int:
        return self.batch_size * self.grad_accum_steps * world_size * self.context_length

    def total_steps(self, world_size: int = 1) -> int:
        """Optimizer steps of the run: max_steps, or enough steps to cover token_budget."""
        if self.token_budget is not None:
            return max(1, math.ceil(self.token_budget / self.tokens_per_step(world_size)))
        assert self.max_steps is not None
        return self.max_steps

    def model_config(self, vocab_size: int | None = None) -> ModelConfig:
        """The :class:`seqlab.model.ModelConfig` this run trains (its fields copied from this config)."""
        vocab = self.vocab_size if self.vocab_size is not None else vocab_size
        if vocab is None:
            raise ValueError("config: vocab_size is unknown (set it or give a data_dir with meta.json)")
        shape = {f.name: getattr(self, f.name) for f in fields(ModelConfig) if f.name != "vocab_size"}
        return ModelConfig(vocab_size=vocab, **shape)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    # -- persistence ----------------------------------------------------------------
    def save_json(self, path: str | Path, *, model_config: Any | None = None, extra: dict | None = None) -> None:
        """Write the resolved config (plus a "model" sub-dict of ModelConfig fields) atomically."""
        payload = self.to_dict()
        if model_config is not None:
            payload["model"] = asdict(model_config)
        payload.update(extra or {})
        from seqlab.atomic import atomic_write_text

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(payload, indent=2) + "\n")

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, source: str = "config") -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{source}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(known))}")
        return cls(**values)

    @classmethod
    def from_json(cls, path: str | Path) -> "TrainConfig":
        """Read a run directory's config.json (derived keys such as "model" are ignored)."""
        try:
            data = json.loads(Path(path).read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}, line {exc.lineno}: invalid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object of config fields")
        known = {f.name: f for f in fields(cls)}
        return cls(**{k: _coerce(known[k], v, f"{path}: key {k!r}") for k, v in data.items() if k in known})


def read_toml(path: str | Path) -> dict[str, Any]:
    """Flatten a TOML config file into {field: value}, checking keys and sections."""
    import tomllib

    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        raise FileNotFoundError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path}: invalid TOML: {exc}") from None
    known = {f.name: f for f in fields(TrainConfig)}
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            if key not in SECTIONS:
                raise ValueError(f"config file {path}: unknown section [{key}]; sections: {', '.join(SECTIONS)}")
            items = [(f"{key}.{k}", k, v) for k, v in value.items()]
        else:
            items = [(key, key, value)]
        for where, name, item in items:
            if name not in known:
                raise ValueError(f"config file {path}: unknown key {where!r}")
            if name in flat:
                raise ValueError(f"config file {path}: key {name!r} is given twice")
            flat[name] = _coerce(known[name], item, f"config file {path}: key {where!r}")
    return flat


def _coerce(f: dataclasses.Field, value: Any, where: str) -> Any:
    """Check a TOML value against the field's type (ints are accepted where floats are)."""
    kind = _base_type(f)
    if value is None:
        return value
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        expected = f"{kind.__name__} or null" if _optional(f) else kind.__name__
        raise ValueError(f"{where} is {value!r}; expected {expected}")
    return value


def _base_type(f: dataclasses.Field) -> type:
    text = str(f.type)
    for name, kind in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if text.startswith(name):
            return kind
    raise TypeError(f"unsupported config field type {f.type!r}")


def _optional(f: dataclasses.Field) -> bool:
    return "None" in str(f.type)


# -- command-line flags -------------------------------------------------------------------


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field (``--d-model``); nothing set means "keep the file/default"."""
    parser.add_argument("--config", metavar="FILE.toml", help="TOML config file (flags override it)")
    groups = {name: parser.add_argument_group(f"{name} options") for name in SECTIONS}
    for f in fields(TrainConfig):
        group = groups[f.metadata["section"]]
        flag = "--" + f.name.replace("_", "-")
        kind = _base_type(f)
        help_text = f.metadata["help"]
        if "default:" not in help_text and f.default not in (None, ""):  # a default of its own is said once
            help_text += f" (default: {f.default})"
        if kind is bool:
            group.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction,
                               default=argparse.SUPPRESS, help=help_text)
            continue
        convert = _optional_converter(kind) if _optional(f) else _FLAG_TYPES.get(kind, kind)
        group.add_argument(flag, dest=f.name, type=convert, default=argparse.SUPPRESS,
                           choices=f.metadata.get("choices"), help=help_text,
                           metavar=f.name.upper())
    ablations = groups["model"]
    for flag, name, value in ABLATION_FLAGS:
        ablations.add_argument(flag, dest=f"ablation_{name}", action="store_const", const=value,
                               default=argparse.SUPPRESS, help=f"ablation: {name}={value}")


_FLAG_TYPES = {float: finite_float}  # flags refuse nan / inf when parsed


def _optional_converter(kind: type):
    """Parse a flag value of an optional field: "none" means None; ints may be written 2e6."""
    def convert(text: str):
        if text.lower() in ("none", "null", ""):
            return None
        if kind is not int:
            return _FLAG_TYPES.get(kind, kind)(text)
        try:
            return int(text)
        except ValueError:
            value = float(text)
            if not value.is_integer():
                raise
            return int(value)

    convert.__name__ = kind.__name__  # argparse names the type in its error message
    return convert


def config_from_argv(argv: list[str]) -> TrainConfig:
    """The TrainConfig that ``seqlab train ARGV...`` would run, e.g. ``["--d-model", "64", "--nope"]``."""
    parser = argparse.ArgumentParser(prog="seqlab train")
    add_config_arguments(parser)
    return config_from_args(parser.parse_args(argv))


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Resolve defaults < (with --resume: the run's config.json) < TOML file < flags."""
    values: dict[str, Any] = {}
    config_path = getattr(args, "config", None)
    if config_path:
        values.update(read_toml(config_path))
    names = {f.name for f in fields(TrainConfig)}
    flags = {name: getattr(args, name) for name in names if name in vars(args)}
    values.update(flags)
    if "max_steps" in flags and "token_budget" not in flags:
        values["token_budget"] = None  # a --max-steps flag wins over a token_budget from the file
    for _flag, name, _value in ABLATION_FLAGS:
        key = f"ablation_{name}"
        if key in vars(args):
            values[name] = getattr(args, key)
    if values.get("resume"):
        saved = Path(values.get("out_dir", TrainConfig.out_dir)) / "config.json"
        if saved.is_file():
            base = TrainConfig.from_json(saved).to_dict()
            base.pop("reschedule")  # asked for by each resume, never inherited
            values = {**base, **values}
    return TrainConfig.from_dict(values, source=str(config_path or "flags"))
