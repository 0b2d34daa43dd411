"""Run settings as dataclasses: one field per setting, read from defaults < a TOML file < flags.

A settings class lists each setting once (section, help, choices); flags, TOML files, a resumed
run's settings and Python code all read that list::

    @dataclass
    class Tiny(Settings):
        lr: float = setting(3e-3, "optimizer", "peak learning rate")

    config, notes = resolve_settings(Tiny, parser.parse_args(["--lr", "0.01"]))   # Tiny(lr=0.01)

With ``--resume`` the run's config.json sits between the defaults and the TOML file. Old names
(:data:`OLD_NAMES`) are read with a note (``max_minutes = 2`` -> ``time_budget_s = 120.0``).
:class:`EngineSettings` are those every training task shares. Standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from seqlab.cli_types import finite_float

SECTIONS = ("run", "data", "model", "optimizer", "schedule", "eval", "system", "logging")


def setting(default: Any, section: str, help: str, **metadata: Any) -> Any:
    """A settings field. ``metadata`` may add ``choices`` (allowed values), ``flags`` (the
    command-line spellings, default ``--field-name``) and ``added`` (see :func:`added_defaults`)."""
    return field(default=default, metadata={"section": section, "help": help, **metadata})


# -- settings added after records were written --------------------------------------------------------


def added_defaults(cls: type) -> dict[str, Any]:
    """{name: default, as JSON keeps it} of the fields of the dataclass ``cls`` that came after
    records were written without them, with a default that keeps those records' behaviour (field
    metadata ``added``: the version, e.g. ``setting(False, ..., added="0.3.0")``). When settings are
    compared (a sweep's, an experiment's, a resumed run's), such a setting equals its absence:
    :func:`with_added_defaults`."""
    return {f.name: list(f.default) if isinstance(f.default, tuple) else f.default
            for f in fields(cls) if "added" in f.metadata}


def with_added_defaults(saved: dict[str, Any], cls: type) -> dict[str, Any]:
    """``saved`` (settings as a record keeps them) with each added setting of ``cls`` it lacks set to
    its default; every other key, present or absent, stays as it is."""
    return {**added_defaults(cls), **saved}


def again(cls: type, name: str, default: Any, **changes: Any) -> Any:
    """The field ``name`` of settings class ``cls`` with another default (and optionally other
    metadata), for a subclass whose task wants a different default."""
    base = cls.__dataclass_fields__[name]
    return field(default=default, metadata={**base.metadata, **changes})


@dataclass(frozen=True)
class OldName:
    """An old name, read for one more release: its value goes to ``new``, through
    ``convert(value, settings)`` when the unit changed (``settings``: every other value resolved)."""

    new: str
    convert: Callable[[Any, dict[str, Any]], Any] | None = None
    how: str = ""  # e.g. "minutes * 60"


# The one table of old names: settings (flags, TOML keys, a run's config.json) and model config
# fields (Seq2SeqConfig.from_dict) seqlab 0.1.0 and before used. A settings class reads those it
# lists in ``OLD``; a model config those that name one of its fields and need no conversion.
OLD_NAMES: dict[str, OldName] = {
    "steps": OldName("max_steps"),
    "layers": OldName("num_layers"),
    "max_seq_len": OldName("context_length"),
    "tie_output": OldName("tie_embeddings"),
    "max_minutes": OldName("time_budget_s", lambda minutes, _: 60.0 * minutes, "minutes * 60 = seconds"),
    "eval_size": OldName("eval_batches", lambda pairs, settings: max(1, math.ceil(pairs / settings["batch_size"])),
                         "validation pairs / batch_size, rounded up"),
}


def field_old_names(names: set[str] | frozenset[str]) -> dict[str, str]:
    """{old: new} of the table's plain renames (no conversion) of the fields ``names``, e.g. a model
    config's: ``{"max_seq_len": "context_length", "tie_output": "tie_embeddings"}``."""
    return {old: rule.new for old, rule in OLD_NAMES.items() if rule.new in names and rule.convert is None}


@dataclass(frozen=True)
class _Pending:
    """A renamed value whose conversion waits until every other setting is known."""

    old: str
    value: Any


# -- the base class -------------------------------------------------------------------------------


@dataclass
class Settings:
    """Base of every settings dataclass: validation from the field metadata, dict/JSON/TOML reading."""

    OLD: ClassVar[tuple[str, ...]] = ()                # old names (of OLD_NAMES) still read, with a note
    POSITIVE: ClassVar[tuple[str, ...]] = ()           # fields that must be >= 1
    SHORTHANDS: ClassVar[tuple[tuple[str, str, Any], ...]] = ()  # (flag, field, value), e.g. --nope

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Choices and finiteness of every field, and ``POSITIVE``; subclasses add their own rules."""
        for f in fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value is not None and value not in choices:
                raise ValueError(f"config {f.name}={value!r}: expected one of {', '.join(map(str, choices))}")
            if isinstance(value, float) and not math.isfinite(value):  # NaN passes every range check
                raise ValueError(f"config {f.name}={value}: must be a finite number")
        for name in self.POSITIVE:
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"config {name}={value}: must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def old_names(cls) -> dict[str, OldName]:
        """The rows of :data:`OLD_NAMES` this class reads (``cls.OLD``)."""
        return {name: OLD_NAMES[name] for name in cls.OLD}

    @classmethod
    def field_map(cls) -> dict[str, dataclasses.Field]:
        return {f.name: f for f in fields(cls)}

    @classmethod
    def renamed_keys(cls, values: dict[str, Any], *, where: str, notes: list[str] | None,
                     flag_names: bool = False) -> dict[str, Any]:
        """``values`` with old names replaced by new ones (a note for each, in ``notes``, or a
        DeprecationWarning when ``notes`` is None); unit changes wait for :meth:`finish_renamed`."""
        out = {}
        for key, value in values.items():
            rule = cls.old_names().get(key)
            if rule is None:
                out[key] = value
                continue
            old, new = (f"--{key.replace('_', '-')}", f"--{rule.new.replace('_', '-')}") if flag_names else (key, rule.new)
            if rule.new in values:
                raise ValueError(f"{where}: {new} is given twice (once under its old name {old})")
            note = (f"{where}: {old} is now {new}" + (f" ({rule.how})" if rule.how else "")
                    + "; the old name is read for one more release")
            if notes is None:
                warnings.warn(note, DeprecationWarning, stacklevel=3)
            else:
                notes.append(note)
            out[rule.new] = _Pending(key, value) if rule.convert else value
        return out

    @classmethod
    def finish_renamed(cls, values: dict[str, Any], *, source: str, name_source: bool = False) -> dict[str, Any]:
        """Convert the renamed values whose unit changed, now that the other settings are known and
        valid (a conversion never sees e.g. batch_size 0: that is refused first, as itself, its
        message starting with ``source`` when ``name_source``)."""
        done = {k: v for k, v in values.items() if not isinstance(v, _Pending)}
        known = cls.field_map()
        if len(done) < len(values):
            checked = {k: _coerce(known[k], v, f"{source}: key {k!r}") for k, v in done.items() if k in known}
            try:
                cls(**checked)
            except ValueError as error:
                raise ValueError(f"{source}: {error}" if name_source else str(error)) from None
        for key, value in values.items():
            if isinstance(value, _Pending):
                rule = cls.old_names()[value.old]
                raw = _coerce(known[key], value.value, f"{source}: key {value.old!r}")
                done[key] = None if raw is None else rule.convert(raw, {**_defaults(cls), **done})
        return done

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, source: str = "config", notes: list[str] | None = None):
        """Settings from {field: value}; unknown keys and values of the wrong type are errors naming
        ``source`` and the key; old names are translated (see :data:`OLD_NAMES`)."""
        values = cls.finish_renamed(cls.renamed_keys(values, where=source, notes=notes), source=source)
        known = cls.field_map()
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"{source}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(known))}")
        return cls(**{k: _coerce(known[k], v, f"{source}: key {k!r}") for k, v in values.items()})

    @classmethod
    def from_saved(cls, values: dict[str, Any], *, source: str, key_prefix: str = "",
                   notes: list[str] | None = None):
        """Settings from a run's config.json: keys that are not settings (derived values such as
        "model") are ignored; a value of the wrong type names the file and key."""
        values = cls.renamed_keys(values, where=source, notes=notes)
        known = cls.field_map()
        kept = {k: v for k, v in values.items() if k in known}
        kept = cls.finish_renamed(kept, source=source, name_source=True)
        values = {k: _coerce(known[k], v, f"{source}: key {key_prefix + k!r}") for k, v in kept.items()}
        try:
            return cls(**values)
        except ValueError as error:  # a value out of range: say which file holds it
            raise ValueError(f"{source}: {error}") from None

    # -- hooks for resolve_settings -----------------------------------------------------------------

    @classmethod
    def adjust_given(cls, values: dict[str, Any], flags: dict[str, Any]) -> None:
        """Settings implied by the flags given (e.g. ``--max-steps`` drops a TOML token budget)."""

    @classmethod
    def saved_settings(cls, out_dir: Path, notes: list[str]) -> dict[str, Any] | None:
        """With ``--resume``: the settings in the run's config.json (None: nothing saved)."""
        return None


def _defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in fields(cls) if f.default is not dataclasses.MISSING}


# -- values of the right type ----------------------------------------------------------------------


def _coerce(f: dataclasses.Field, value: Any, where: str) -> Any:
    """Check a value against the field's type (ints are accepted where floats are)."""
    kind = _base_type(f)
    if value is None:
        if _optional(f):
            return value
        raise ValueError(f"{where} is null; expected {kind.__name__}")
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
    raise TypeError(f"unsupported settings field type {f.type!r}")


def _optional(f: dataclasses.Field) -> bool:
    return "None" in str(f.type)


# -- TOML -------------------------------------------------------------------------------------------


def read_toml(path: str | Path, cls: type[Settings], notes: list[str] | None = None) -> dict[str, Any]:
    """Flatten a TOML settings file into {field: value}, checking keys, sections and types."""
    import tomllib

    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        raise FileNotFoundError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path}: invalid TOML: {exc}") from None
    known = cls.field_map()
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, dict):
            if key not in SECTIONS:
                raise ValueError(f"config file {path}: unknown section [{key}]; sections: {', '.join(SECTIONS)}")
            items = [(f"{key}.{k}", k, v) for k, v in value.items()]
        else:
            items = [(key, key, value)]
        for where, name, item in items:
            if name not in known and name not in cls.old_names():
                raise ValueError(f"config file {path}: unknown key {where!r}")
            new = cls.old_names()[name].new if name in cls.old_names() else name
            if new in flat:
                raise ValueError(f"config file {path}: key {new!r} is given twice")
            if name in cls.old_names():
                flat.update(cls.renamed_keys({name: item}, where=f"config file {path}", notes=notes))
            else:
                flat[name] = _coerce(known[name], item, f"config file {path}: key {where!r}")
    return flat


# -- command-line flags -------------------------------------------------------------------------------


def flag_names(f: dataclasses.Field) -> tuple[str, ...]:
    return tuple(f.metadata.get("flags") or ("--" + f.name.replace("_", "-"),))


def add_config_arguments(parser: argparse.ArgumentParser, cls: type[Settings]) -> None:
    """``--config FILE.toml`` and one flag per field of ``cls`` (``--d-model``), grouped by section;
    nothing given means "keep the file's / saved / default value". Old names of renamed settings
    are accepted (listed as deprecated), and ``cls.SHORTHANDS`` add flags such as ``--nope``."""
    parser.add_argument("--config", metavar="FILE.toml", help="TOML config file (flags override it)")
    known = cls.field_map()
    used = {f.metadata["section"] for f in fields(cls)}
    groups = {name: parser.add_argument_group(f"{name} options") for name in SECTIONS if name in used}
    for f in fields(cls):
        group = groups[f.metadata["section"]]
        kind = _base_type(f)
        help_text = f.metadata["help"]
        if "default:" not in help_text and f.default not in (None, "") and kind is not bool:
            help_text += f" (default: {f.default})"  # a default of its own is said once
        if kind is bool:
            group.add_argument(*flag_names(f), dest=f.name, action=argparse.BooleanOptionalAction,
                               default=argparse.SUPPRESS, help=help_text)
            continue
        group.add_argument(*flag_names(f), dest=f.name, type=_flag_type(f), default=argparse.SUPPRESS,
                           choices=f.metadata.get("choices"), help=help_text, metavar=f.name.upper())
    for flag, name, value in cls.SHORTHANDS:
        groups[known[name].metadata["section"]].add_argument(
            flag, dest=f"shorthand_{name}", action="store_const", const=value, default=argparse.SUPPRESS,
            help=f"ablation: {name}={value}")
    if cls.old_names():
        old = parser.add_argument_group("renamed options (the old names work for one more release)")
        for name, rule in cls.old_names().items():
            target = known[rule.new]
            how = f" ({rule.how})" if rule.how else ""
            if _base_type(target) is bool:
                old.add_argument("--" + name.replace("_", "-"), dest=f"renamed_{name}",
                                 action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                                 help=f"now {flag_names(target)[0]}")
                continue
            old.add_argument("--" + name.replace("_", "-"), dest=f"renamed_{name}", type=_flag_type(target),
                             default=argparse.SUPPRESS, metavar=name.upper(),
                             help=f"now {flag_names(target)[0]}{how}")


_FLAG_TYPES = {float: finite_float}  # flags refuse nan / inf when parsed


def _flag_type(f: dataclasses.Field):
    kind = _base_type(f)
    return _optional_converter(kind) if _optional(f) else _FLAG_TYPES.get(kind, kind)


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


def given_flags(cls: type[Settings], args: argparse.Namespace, notes: list[str]) -> dict[str, Any]:
    """The settings the command line gave: fields, shorthands, and old names (translated)."""
    given = vars(args)
    values = {name: given[name] for name in cls.field_map() if name in given}
    for _flag, name, _value in cls.SHORTHANDS:
        if f"shorthand_{name}" in given:
            values[name] = given[f"shorthand_{name}"]
    old = {name: given[f"renamed_{name}"] for name in cls.old_names() if f"renamed_{name}" in given}
    values.update(cls.renamed_keys({**values, **old}, where="flags", notes=notes, flag_names=True))
    return values


def resolve_settings(cls: type[Settings], args: argparse.Namespace) -> tuple[Settings, list[str]]:
    """The settings a command runs with: defaults < (``--resume``: the run's config.json) < the
    ``--config`` TOML file < flags; and the notes to show (renamed settings in use)."""
    notes: list[str] = []
    values: dict[str, Any] = {}
    config_path = getattr(args, "config", None)
    if config_path:
        values.update(read_toml(config_path, cls, notes))
    flags = given_flags(cls, args, notes)
    values.update(flags)
    cls.adjust_given(values, flags)
    if values.get("resume") and values.get("overwrite"):  # the engine would resume and ignore --overwrite
        raise ValueError("--resume continues the run in --out and --overwrite starts a new one there; give one of "
                         "them")
    if values.get("resume"):
        out_dir = Path(values.get("out_dir", cls.__dataclass_fields__["out_dir"].default))
        saved = cls.saved_settings(out_dir, notes)
        if saved is not None:
            saved.pop("reschedule", None)  # asked for by each resume, never inherited
            values = {**saved, **values}
    return cls.from_dict(values, source=str(config_path or "flags"), notes=notes), notes


# -- the settings every training task shares ----------------------------------------------------------


@dataclass
class EngineSettings(Settings):
    """The settings the training engine reads, whatever the task (``seqlab.training.engine``).

    Batch sizes are per process and per micro-batch: one optimizer step sees
    ``batch_size * grad_accum_steps * world_size`` examples.
    """

    # run
    out_dir: str = setting("runs/run", "run", "run directory (config, checkpoints, log, plot)",
                           flags=("--out", "--out-dir"))
    resume: bool = setting(False, "run", "continue from OUT/checkpoints/latest.pt")
    overwrite: bool = setting(False, "run", "start over in an OUT that already holds a run (the old run stays "
                                            "until the new one saves its first checkpoint)")
    seed: int = setting(0, "run", "seed for initialisation and batch sampling")
    # optimizer (AdamW)
    lr: float = setting(3e-3, "optimizer", "peak learning rate")
    min_lr: float | None = setting(None, "optimizer", "final learning rate of the cosine (default: lr / 10)")
    beta1: float = setting(0.9, "optimizer", "AdamW beta1")
    beta2: float = setting(0.95, "optimizer", "AdamW beta2")
    eps: float = setting(1e-8, "optimizer", "AdamW epsilon")
    weight_decay: float = setting(0.1, "optimizer", "decoupled weight decay")
    grad_clip: float = setting(1.0, "optimizer", "global gradient-norm clip (0 = off)")
    # schedule and length
    batch_size: int = setting(32, "schedule", "examples per micro-batch per process")
    grad_accum_steps: int = setting(1, "schedule", "micro-batches per optimizer step")
    max_steps: int | None = setting(1000, "schedule", "optimizer steps")
    warmup_steps: int = setting(100, "schedule", "linear warm-up steps, then cosine to min_lr at the last step")
    reschedule: bool = setting(False, "schedule", "with --resume: stretch the cosine to the new length "
                                                  "(default: keep the run's original schedule)")
    time_budget_s: float | None = setting(None, "schedule", "stop after this many seconds of training; the "
                                                            "cosine follows elapsed time (max_steps is then a cap)")
    # evaluation and checkpoints
    eval_interval: int = setting(200, "eval", "evaluate every N steps (and at the end)")
    eval_batches: int = setting(10, "eval", "validation batches per evaluation")
    checkpoint_interval: int = setting(500, "eval", "checkpoint every N steps (and at the end)")
    log_interval: int = setting(10, "logging", "write a train-loss line to log.jsonl every N steps")
    # system
    device: str = setting("auto", "system", "auto | cpu | cuda | cuda:N | mps")
    precision: str = setting("auto", "system",
                             "auto (CUDA: bf16, or fp16 + grad scaler before Ampere; else fp32) | fp32 | bf16 | fp16",
                             choices=("auto", "fp32", "bf16", "fp16"))
    compile: bool = setting(False, "system", "torch.compile the model and its loss, one compiled region "
                                             "(switched off where unsupported)")
    fused_loss: str = setting("auto", "system", "compute the output layer and the loss together, a block of tokens "
                              "at a time, never holding every token's logits: auto (on CUDA/MPS, off on CPU, where "
                              "it measured slower) | on | off", choices=("auto", "on", "off"))
    pad_vocab_multiple: int = setting(1, "system", "inside the fused loss, round the output layer's vocabulary up "
                                      "to a multiple of this (e.g. 128; aligned matmul sizes for GPUs); token ids, "
                                      "weights and sampling are unchanged; 1 = off")
    threads: int | None = setting(None, "system", "torch CPU threads (default: torch's choice)")
    # optional trackers
    wandb: bool = setting(False, "logging", "also log to Weights & Biases (package wandb)")
    wandb_project: str = setting("seqlab", "logging", "W&B project name")
    tensorboard: bool = setting(False, "logging", "also log to TensorBoard (package tensorboard)")
    progress: bool = setting(True, "logging", "show the tqdm progress bar")

    POSITIVE: ClassVar[tuple[str, ...]] = ("batch_size", "grad_accum_steps", "eval_interval", "eval_batches",
                                           "checkpoint_interval", "log_interval", "max_steps", "pad_vocab_multiple")

    def validate(self) -> None:
        super().validate()
        if self.warmup_steps < 0:
            raise ValueError(f"config warmup_steps={self.warmup_steps}: must be >= 0")
        if self.lr <= 0:
            raise ValueError(f"config lr={self.lr}: must be > 0")
        for name in ("min_lr", "grad_clip", "weight_decay"):  # a negative min_lr would end in gradient ascent
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"config {name}={value}: must be >= 0")
        for name in ("beta1", "beta2"):
            value = getattr(self, name)
            if not 0 <= value < 1:  # beta = 1 never forgets the first gradient; above 1 the moments grow
                raise ValueError(f"config {name}={value}: must be in [0, 1) (e.g. 0.9)")
        if self.eps <= 0:  # with eps = 0 a parameter whose gradient is still 0 is updated by 0/0 = NaN
            raise ValueError(f"config eps={self.eps}: must be > 0 (e.g. 1e-8)")
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

    def total_steps(self, world_size: int = 1) -> int:
        """Optimizer steps of the run."""
        if self.max_steps is None:
            raise ValueError("config: set max_steps")
        return self.max_steps
