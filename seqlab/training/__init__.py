"""Training pieces: loss, optimizer, schedule, clipping, batches, checkpoints (and the trainer).

Names load on first use (PEP 562), so importing a submodule such as ``seqlab.training.cli`` (which
``seqlab --help`` does) does not import torch.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

_EXPORTS = {
    "get_batch": "seqlab.training.batching",
    "load_checkpoint": "seqlab.training.checkpoint",
    "load_model_from_checkpoint": "seqlab.training.checkpoint",
    "read_checkpoint": "seqlab.training.checkpoint",
    "save_checkpoint": "seqlab.training.checkpoint",
    "clip_grad_norm": "seqlab.training.clipping",
    "cross_entropy": "seqlab.training.loss",
    "AdamW": "seqlab.training.optimizer",
    "lr_cosine_schedule": "seqlab.training.schedule",
    # training pipeline (config, trainer, data preparation)
    "TrainConfig": "seqlab.training.config",
    "PreparedData": "seqlab.training.data",
    "load_tokens": "seqlab.training.data",
    "prepare": "seqlab.training.data",
    "NonFiniteLossError": "seqlab.training.trainer",
    "Trainer": "seqlab.training.trainer",
    "TrainResult": "seqlab.training.trainer",
    "train": "seqlab.training.trainer",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
