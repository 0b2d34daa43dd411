"""The run directory of ``seqlab train`` and the files written into it before the first step.

Layout::

    RUN/config.json              resolved TrainConfig + "model" (ModelConfig fields)
    RUN/checkpoints/latest.pt    newest checkpoint (atomic), plus step_{step:07d}.pt
    RUN/tokenizer/               copy of the data's tokenizer
    RUN/log.jsonl                train and eval records (seqlab.training.logging_utils.RunLog)
    RUN/loss_curve.png           loss vs steps and vs wallclock, redrawn at each eval

``seqlab generate --run RUN`` and ``seqlab eval --run RUN`` read checkpoints/latest.pt and tokenizer/.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from seqlab.atomic import atomic_path
from seqlab.model.config import ModelConfig
from seqlab.training.config import TrainConfig


def write_run_files(config: TrainConfig, model_config: ModelConfig, *, world_size: int, total_steps: int) -> Path:
    """Create RUN (config.out_dir), write config.json and copy the data's tokenizer; return RUN.

    ``--overwrite`` (without ``--resume``) first removes the old run's checkpoints; a resumed run
    keeps the tokenizer it already has. Both writes are atomic.
    """
    run_dir = Path(config.out_dir)
    if config.overwrite and not config.resume:
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)  # no stale checkpoints of the old run
    run_dir.mkdir(parents=True, exist_ok=True)
    config.save_json(run_dir / "config.json", model_config=model_config,
                     extra={"world_size": world_size, "total_steps": total_steps})
    source = Path(config.data_dir) / "tokenizer"
    target = run_dir / "tokenizer"
    if source.is_dir() and not (target.exists() and config.resume):
        with atomic_path(target) as tmp:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(source, tmp)
            shutil.rmtree(target, ignore_errors=True)  # os.replace cannot replace a folder
    return run_dir
