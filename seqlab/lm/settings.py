"""Training configuration of ``seqlab train``: one dataclass, filled from defaults, then a TOML
file, then flags (the machinery, and the settings every training task shares, are
:mod:`seqlab.settings`'s).

Precedence is ``defaults < TOML < command-line flags``. The TOML file may be flat or use the
section names below (``[model]``, ``[optimizer]``, ...); sections only group keys for the reader,
every key is a field of :class:`TrainConfig`. Unknown keys are an error naming the file and key.

Batch sizes are per process and per micro-batch: one optimizer step sees
``batch_size * grad_accum_steps * world_size`` sequences of ``context_length`` tokens.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from seqlab import settings as _settings
from seqlab.model.config import ModelConfig, check_kv_heads, model_setting_fields
from seqlab.settings import SECTIONS, EngineSettings, again, setting  # noqa: F401 (SECTIONS kept importable)

# Shorthand flags for the ablations of the model, as (flag, field, value).
ABLATION_FLAGS = (
    ("--no-rmsnorm", "norm", "none"),
    ("--post-norm", "norm_position", "post"),
    ("--nope", "positional", "nope"),
    ("--silu-ffn", "ffn", "silu"),
)


@dataclass
@model_setting_fields(ModelConfig, "model")
class TrainConfig(EngineSettings):
    """Everything ``seqlab train`` needs: the engine's settings (:class:`seqlab.settings.EngineSettings`),
    the data, and every field of :class:`seqlab.model.ModelConfig` (added from its declaration, with
    its defaults and help; ``vocab_size`` None = the data's vocabulary size from meta.json)."""

    # data
    data_dir: str = setting("", "data", "prepared data directory (train.npy, valid.npy, meta.json, tokenizer/)")
    # length by tokens instead of steps
    max_steps: int | None = again(EngineSettings, "max_steps", 1000,
                                  help="optimizer steps (a --max-steps flag replaces a TOML token_budget)")
    token_budget: int | None = setting(None, "schedule", "train on this many tokens instead of max_steps")
    # head telemetry (seqlab.lm.telemetry)
    track_heads: bool = setting(False, "eval", "at every evaluation also log each attention head's previous-token, "
                                               "duplicate-token, induction and first-token scores to log.jsonl",
                                added="0.3.0")

    POSITIVE: ClassVar[tuple[str, ...]] = (*EngineSettings.POSITIVE, "context_length", "d_model", "num_layers",
                                           "num_heads", "token_budget")
    SHORTHANDS: ClassVar[tuple[tuple[str, str, Any], ...]] = ABLATION_FLAGS

    # -- derived values -------------------------------------------------------------
    def validate(self) -> None:
        if self.max_steps is None and self.token_budget is None:
            raise ValueError("config: set max_steps or token_budget")
        super().validate()
        if self.num_kv_heads is not None:
            try:
                check_kv_heads(self.num_heads, self.num_kv_heads)
            except ValueError as error:
                raise ValueError(f"config num_kv_heads={self.num_kv_heads}: {error}") from None

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

    # -- the run's config.json ------------------------------------------------------
    def run_config(self, model_config: ModelConfig, *, world_size: int, total_steps: int, **data: Any):
        """The :class:`seqlab.runs.config.RunConfig` of a run trained with these settings: the
        settings (with ``world_size`` and ``total_steps``), ``model_config``'s fields, and the data
        (``data_dir``, the tokenizer's place and size, and ``data``, e.g. ``imported_from``)."""
        from seqlab.runs.config import RunConfig
        from seqlab.runs.kinds import TOKENIZER_DIR, Kind

        settings = {**self.to_dict(), "world_size": world_size, "total_steps": total_steps}
        facts = {"data_dir": self.data_dir, "tokenizer": TOKENIZER_DIR, "vocab_size": model_config.vocab_size, **data}
        return RunConfig(Kind.LM, settings, asdict(model_config), facts)

    @classmethod
    def from_run(cls, run: str | Path, notes: list[str] | None = None) -> "TrainConfig":
        """The settings of the LM run ``run`` (its config.json, whichever seqlab wrote it; old names
        and an old layout are read with a note in ``notes``)."""
        from seqlab.runs.config import read_run_config

        path = Path(run) / "config.json"
        saved = read_run_config(run)
        if notes is not None:
            notes.extend(saved.notes)
        return cls.from_saved(saved.settings, source=str(path), key_prefix=saved.settings_at, notes=notes)

    @classmethod
    def from_json(cls, path: str | Path) -> "TrainConfig":
        """The settings in a run directory's config.json (:meth:`from_run`)."""
        path = Path(path)
        if path.name != "config.json":
            raise ValueError(f"{path}: expected a run's config.json")
        return cls.from_run(path.parent)

    # -- resolve_settings hooks --------------------------------------------------------
    @classmethod
    def adjust_given(cls, values: dict[str, Any], flags: dict[str, Any]) -> None:
        if "max_steps" in flags and "token_budget" not in flags:
            values["token_budget"] = None  # a --max-steps flag wins over a token_budget from the file

    @classmethod
    def saved_settings(cls, out_dir: Path, notes: list[str]) -> dict[str, Any] | None:
        """The run's config.json under the flags of a ``--resume`` (a seq2seq run is refused, naming
        the command that continues it)."""
        from seqlab.runs.kinds import check_kind

        if not (out_dir / "config.json").is_file():
            return None
        check_kind(out_dir, "lm", "resume")
        return cls.from_run(out_dir, notes).to_dict()


def read_toml(path: str | Path) -> dict[str, Any]:
    """Flatten a TOML config file into {field: value}, checking keys and sections."""
    return _settings.read_toml(path, TrainConfig)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field (``--d-model``); nothing set means "keep the file/default"."""
    _settings.add_config_arguments(parser, TrainConfig)


def config_from_argv(argv: list[str]) -> TrainConfig:
    """The TrainConfig that ``seqlab train ARGV...`` would run, e.g. ``["--d-model", "64", "--nope"]``."""
    parser = argparse.ArgumentParser(prog="seqlab train")
    add_config_arguments(parser)
    return config_from_args(parser.parse_args(argv))


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Resolve defaults < (with --resume: the run's config.json) < TOML file < flags."""
    return _settings.resolve_settings(TrainConfig, args)[0]
