"""A run's config.json: one schema for both kinds of run, its one writer and its one reader.

    {"kind": "lm" | "seq2seq", "settings": {...}, "model": {...}, "data": {...}, "seqlab_version": "0.2.0"}

``settings`` are the training settings (plus the run's ``total_steps`` and ``world_size``),
``model`` the model config's fields, ``data`` what the run was trained on. The reader also takes
the two shapes seqlab 0.1.0 wrote (an LM run's flat settings plus "model", with or without
"kind"; a seq2seq run's ``{"train", "model_config", "vocab", "data"}``) and returns them in this
schema with a note. Old setting names inside are translated by the settings classes
(:data:`seqlab.settings.OLD_NAMES`). Standard library only::

    write_run_config(run, RunConfig(Kind.LM, settings, model, {"data_dir": "data/ts"}))
    read_run_config(run).model["d_model"]                    # 64, whichever seqlab wrote it
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.jsonfile import read_json
from seqlab.runs.kinds import CONFIG_FILE, Kind, config_kind

PARTS = ("settings", "model", "data")
# what seqlab 0.1.0 kept beside a seq2seq run's "train" settings, and where it goes now
OLD_SEQ2SEQ_FACTS = ("parameters", "world_size", "total_steps")
# the seq2seq settings that say which pairs and tokens a run was trained on, repeated in "data"
DATA_SETTINGS = ("task", "pairs", "tokenize", "tokenizer")


@dataclass
class RunConfig:
    """The contents of RUN/config.json. ``settings_at`` is where the settings were in the file
    (``"settings."``, or ``"train."`` / ``""`` in an old one), so errors name the key as written;
    ``notes`` say what was converted on reading."""

    kind: Kind
    settings: dict[str, Any]
    model: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    seqlab_version: str | None = None
    notes: list[str] = field(default_factory=list)
    settings_at: str = "settings."

    def to_dict(self) -> dict[str, Any]:
        return {"kind": Kind(self.kind).value, "settings": self.settings, "model": self.model, "data": self.data,
                "seqlab_version": self.seqlab_version}


def write_run_config(run: str | Path, config: RunConfig) -> Path:
    """Write RUN/config.json atomically in the one schema (stamped with this seqlab's version);
    creates RUN. The only writer of a run's config.json (tests/test_layout.py holds the rule)."""
    from seqlab import __version__

    if config.kind not in (Kind.LM.value, Kind.SEQ2SEQ.value):
        raise ValueError(f"RunConfig.kind must be \"lm\" or \"seq2seq\", got {config.kind!r}")
    for part in PARTS:
        if not isinstance(getattr(config, part), dict):
            raise TypeError(f"RunConfig.{part} must be a dict, got {type(getattr(config, part)).__name__}")
    path = Path(run) / CONFIG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({**config.to_dict(), "seqlab_version": __version__}, indent=2)
    atomic_write_text(path, text + "\n")
    return path


def read_run_config(run: str | Path) -> RunConfig:
    """RUN/config.json as a :class:`RunConfig`, whichever seqlab wrote it. A missing file is a
    FileNotFoundError; invalid JSON, another shape or an unknown kind a ValueError naming the file
    (and the line or field)."""
    path = Path(run) / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    try:
        data = read_json(path, expected=dict, expected_text="a JSON object of settings")
    except FileNotFoundError:  # removed between the check and the read
        raise FileNotFoundError(f"{path} does not exist") from None
    return parse_run_config(data, source=str(path))


def parse_run_config(data: dict[str, Any], *, source: str) -> RunConfig:
    """The :class:`RunConfig` of a config.json's contents ``data`` (``source`` names the file in
    errors and notes); the two old shapes are converted, each with a note."""
    kind = config_kind(data)
    if "settings" in data:
        if kind is None:
            raise ValueError(f"{source}: field 'kind' must be \"lm\" or \"seq2seq\", found {data.get('kind')!r}")
        for part in PARTS:
            if not isinstance(data.get(part, {}), dict):
                raise ValueError(f"{source}: field {part!r} must be a JSON object, found {type(data[part]).__name__}")
        version = data.get("seqlab_version")
        return RunConfig(kind, dict(data["settings"]), dict(data.get("model", {})), dict(data.get("data", {})),
                         version if isinstance(version, str) else None)
    kind = kind or Kind.LM
    note = (f"{source}: written by an older seqlab (0.1.0), in its {kind.value} layout; read as the one "
            "config.json schema (a resume rewrites it)")
    if kind is Kind.SEQ2SEQ:
        return _old_seq2seq(data, source, note)
    return _old_lm(data, note)  # flat settings: only LM runs (and TrainConfig.save_json) wrote them


def _old_lm(data: dict[str, Any], note: str) -> RunConfig:
    """seqlab 0.1.0's LM config.json: TrainConfig fields, "model", "world_size", "total_steps"
    (``TrainConfig.save_json`` wrote the same without "kind")."""
    settings = {k: v for k, v in data.items() if k not in ("kind", "model", "imported_from")}
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    facts = {"data_dir": settings["data_dir"]} if "data_dir" in settings else {}
    if "imported_from" in data:
        facts["imported_from"] = data["imported_from"]
    return RunConfig(Kind.LM, settings, dict(model), facts, None, [note], settings_at="")


def _old_seq2seq(data: dict[str, Any], source: str, note: str) -> RunConfig:
    """seqlab 0.1.0's seq2seq config.json: {"train", "model_config", "vocab", "data", "parameters",
    "world_size", "total_steps"}."""
    train = data.get("train")
    if not isinstance(train, dict):
        raise ValueError(f"{source}: field 'train' must be a JSON object of settings, found "
                         f"{type(train).__name__ if train is not None else 'nothing'}; the file was not written by "
                         "`seqlab seq2seq train` (or was edited)")
    model = data.get("model_config")
    if model is not None and not isinstance(model, dict):
        raise ValueError(f"{source}: field 'model_config' must be a JSON object, found {type(model).__name__}")
    settings = {**train, **{k: data[k] for k in OLD_SEQ2SEQ_FACTS if k in data}}
    facts = dict(data["data"]) if isinstance(data.get("data"), dict) else {}
    if isinstance(data.get("vocab"), dict):
        facts["vocab"] = dict(data["vocab"])
    facts.update({k: train[k] for k in DATA_SETTINGS if k in train})
    return RunConfig(Kind.SEQ2SEQ, settings, dict(model or {}), facts, None, [note], settings_at="train.")
