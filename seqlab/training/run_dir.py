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

from seqlab.atomic import atomic_directory, remove_stale_temporaries
from seqlab.model.config import ModelConfig
from seqlab.tokenizer.files import TOKENIZER_FILES
from seqlab.training.config import TrainConfig


def write_run_files(config: TrainConfig, model_config: ModelConfig, *, world_size: int, total_steps: int) -> Path:
    """Create RUN (config.out_dir), write config.json and copy the data's tokenizer; return RUN.

    A resumed run keeps the tokenizer it already has. Both writes are atomic: the tokenizer files
    (:data:`~seqlab.tokenizer.files.TOKENIZER_FILES`) are copied into a new folder that replaces
    RUN/tokenizer whole, so there is never a moment without a tokenizer or with a mix of two. (``--overwrite``
    keeps the old run's checkpoints, and calls this only at the new run's first save, so the files
    always describe the checkpoints beside them: see :func:`remove_old_checkpoints`.)
    """
    run_dir = Path(config.out_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    config.save_json(run_dir / "config.json", model_config=model_config,
                     extra={"world_size": world_size, "total_steps": total_steps})
    source = Path(config.data_dir) / "tokenizer"
    target = run_dir / "tokenizer"
    if source.is_dir() and not (target.exists() and config.resume):
        with atomic_directory(target, TOKENIZER_FILES) as tmp:
            for name in TOKENIZER_FILES:
                if (source / name).is_file():
                    shutil.copyfile(source / name, tmp / name)
    return run_dir


def check_run_dir(config: TrainConfig) -> None:
    """Clear errors for an ``out_dir`` that is a file, or a ``--resume`` where no run is."""
    run_dir = Path(config.out_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise NotADirectoryError(f"--out-dir {run_dir} is a file; give a directory for the run "
                                 "(it is created if missing)")
    if config.resume and not run_dir.is_dir():
        raise FileNotFoundError(f"--resume: no run at {run_dir} (give the --out-dir of an earlier "
                                "`seqlab train`, or drop --resume to start a new run)")


def remove_run_temporaries(run_dir: Path) -> list[Path]:
    """Remove what killed runs left half-written in RUN and RUN/checkpoints (their process is gone)."""
    return [*remove_stale_temporaries(run_dir), *remove_stale_temporaries(run_dir / "checkpoints")]


def checkpoint_files(ckpt_dir: Path) -> list[Path]:
    """The checkpoints in ``ckpt_dir`` (latest.pt and step_*.pt), oldest name first."""
    if not ckpt_dir.is_dir():
        return []
    return sorted(p for p in ckpt_dir.iterdir() if p.name == "latest.pt" or
                  (p.name.startswith("step_") and p.suffix == ".pt"))


def remove_old_checkpoints(old: list[Path], keep: set[Path]) -> None:
    """Delete an overwritten run's checkpoints once the new run has saved its own (``keep``)."""
    for path in old:
        if path not in keep:
            path.unlink(missing_ok=True)
