"""Loading a trained seq2seq run back: its model (eval mode), vocabularies, settings and step.

    run = load_run("runs/dates", device="auto")     # RUN/checkpoints/latest.pt + RUN/vocab.json
    translate(run, ["Jan 15, 2020"])                 # ["2020-01-15"] (seqlab.seq2seq.decoding)

The run's files are read through the run format (:mod:`seqlab.runs`); a language-model run is
refused with the command that reads it. Nothing here imports a training module: code that only
translates stays light.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seqlab.runs.checkpoint import load_payload, read_checkpoint
from seqlab.runs.directory import read_vocab_json
from seqlab.runs.kinds import Kind, check_kind
from seqlab.runtime import resolve_device
from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import Seq2SeqConfig
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.vocab import vocab_from_dict


@dataclass
class Seq2SeqRun:
    """A loaded seq2seq run: the model (eval mode), its vocabularies, the settings it was trained
    with, and the step of its checkpoint."""

    model: Any
    src_vocab: Any
    tgt_vocab: Any
    train_config: Seq2SeqTrainConfig
    step: int
    run_dir: Path

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


def read_vocabs(run_dir: str | Path):
    """(source vocab, target vocab) of RUN/vocab.json; errors name the file."""
    path = Path(run_dir) / "vocab.json"
    data = read_vocab_json(run_dir)
    try:
        return vocab_from_dict(data["source"], source=str(path)), vocab_from_dict(data["target"], source=str(path))
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a seq2seq vocabulary file ({error})") from None


def load_run(run_dir: str | Path, *, device: str | torch.device | None = None) -> Seq2SeqRun:
    """The trained model (eval mode on ``device``, default "auto") and vocabularies of a run directory."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir} is a file, not a run directory: give the folder that `seqlab seq2seq "
                                "train --out` wrote")
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory {run_dir} does not exist")
    check_kind(run_dir, Kind.SEQ2SEQ, "use")
    ckpt = run_dir / "checkpoints" / "latest.pt"
    payload = read_checkpoint(ckpt)
    if not payload.get("model_config"):
        raise ValueError(f"{ckpt} has no model_config: it is not a seq2seq checkpoint")
    model_config = Seq2SeqConfig.from_dict(payload["model_config"], source=f"{ckpt}: model_config")
    src_vocab, tgt_vocab = read_vocabs(run_dir)
    if (src_vocab.size, tgt_vocab.size) != (model_config.src_vocab_size, model_config.tgt_vocab_size):
        raise ValueError(f"{run_dir / 'vocab.json'} has {src_vocab.size}/{tgt_vocab.size} source/target ids but the "
                         f"checkpoint's model has {model_config.src_vocab_size}/{model_config.tgt_vocab_size}")
    if isinstance(device, str) or device is None:
        device = resolve_device(device or "auto")
    model_config.attention = "auto"  # the backend for this device, not the one it trained with (as load_model)
    model = build_model(model_config, device=device)
    step = load_payload(payload, model, source=ckpt)
    model.eval()
    saved = payload["extra"].get("config")
    if not isinstance(saved, dict):
        raise ValueError(f"{ckpt}: its extra state holds no training settings (not a `seqlab seq2seq train` checkpoint)")
    train_config = Seq2SeqTrainConfig.from_saved(saved, source=str(ckpt), notes=[])
    return Seq2SeqRun(model, src_vocab, tgt_vocab, train_config, step, run_dir)
