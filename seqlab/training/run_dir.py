"""The files ``seqlab train`` writes into its run directory before the first step (the layout and
the shared helpers are the run format's: :mod:`seqlab.runs`).

``seqlab generate --run RUN`` and ``seqlab eval --run RUN`` read checkpoints/latest.pt and tokenizer/.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from seqlab.model.config import ModelConfig
from seqlab.runs.checkpoint import checkpoint_files, remove_old_checkpoints  # noqa: F401 (kept importable)
from seqlab.runs.directory import LM, check_out_dir, copy_tokenizer, remove_run_temporaries, write_config  # noqa: F401
from seqlab.tokenizer.files import TOKENIZER_FILES
from seqlab.training.config import TrainConfig


def write_run_files(config: TrainConfig, model_config: ModelConfig, *, world_size: int, total_steps: int) -> Path:
    """Create RUN (config.out_dir), write config.json and copy the data's tokenizer; return RUN.

    A resumed run keeps the tokenizer it already has. Both writes are atomic: the tokenizer files
    (:data:`~seqlab.tokenizer.files.TOKENIZER_FILES`) are copied into a new folder that replaces
    RUN/tokenizer whole, so there is never a moment without a tokenizer or with a mix of two. (``--overwrite``
    keeps the old run's checkpoints, and calls this only at the new run's first save, so the files
    always describe the checkpoints beside them.)
    """
    run_dir = Path(config.out_dir)
    write_config(run_dir, {**config.to_dict(), "model": asdict(model_config), "world_size": world_size,
                           "total_steps": total_steps}, kind=LM)
    source = Path(config.data_dir) / "tokenizer"
    if source.is_dir() and not ((run_dir / "tokenizer").exists() and config.resume):
        copy_tokenizer(source, run_dir, TOKENIZER_FILES)
    return run_dir


def check_run_dir(config: TrainConfig) -> None:
    """Clear errors for an ``out_dir`` that is a file, or a ``--resume`` where no run is."""
    check_out_dir(config.out_dir, resume=config.resume, flag="--out-dir")
