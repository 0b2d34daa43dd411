"""Training: the engine (one loop for every task), its task interface, the language-model task and
``Trainer``/``train`` (the engine with it); optimizer, schedule, clipping, batches, checkpoints
(``cross_entropy`` is re-exported from seqlab.model.loss, where inference can reach it too).

Names load on first use (PEP 562), so importing a submodule such as ``seqlab.training.cli`` (which
``seqlab --help`` does) does not import torch.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.training.batching": ("get_batch",),
    "seqlab.training.checkpoint": (
        "load_checkpoint",
        "load_model_from_checkpoint",
        "read_checkpoint",
        "save_checkpoint",
    ),
    "seqlab.training.clipping": ("clip_grad_norm",),
    "seqlab.model.loss": ("cross_entropy",),
    "seqlab.training.optimizer": ("AdamW",),
    "seqlab.training.schedule": ("lr_cosine_schedule",),
    "seqlab.training.config": ("TrainConfig",),
    "seqlab.training.data": ("PreparedData", "load_tokens", "prepare"),
    "seqlab.training.trainer": ("NonFiniteLossError", "Trainer", "TrainResult", "train"),
    "seqlab.training.engine": ("Engine",),
    "seqlab.training.task": ("Batch", "Drawn", "Task"),
    "seqlab.training.lm_task": ("LanguageModelTask",),
})
