"""Training pieces: loss, optimizer, schedule, clipping, batches, checkpoints (and the trainer)."""

from seqlab.training.batching import get_batch
from seqlab.training.checkpoint import (
    load_checkpoint,
    load_model_from_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from seqlab.training.clipping import clip_grad_norm
from seqlab.training.loss import cross_entropy
from seqlab.training.optimizer import AdamW
from seqlab.training.schedule import lr_cosine_schedule

__all__ = [
    "AdamW",
    "clip_grad_norm",
    "cross_entropy",
    "get_batch",
    "load_checkpoint",
    "load_model_from_checkpoint",
    "lr_cosine_schedule",
    "read_checkpoint",
    "save_checkpoint",
]

# Training pipeline (config, trainer, data preparation) - appended by the training-pipeline area.
from seqlab.training.config import TrainConfig  # noqa: E402
from seqlab.training.data import PreparedData, load_tokens, prepare  # noqa: E402
from seqlab.training.trainer import NonFiniteLossError, Trainer, TrainResult, train  # noqa: E402

__all__ += ["NonFiniteLossError", "PreparedData", "TrainConfig", "TrainResult", "Trainer", "load_tokens",
            "prepare", "train"]
