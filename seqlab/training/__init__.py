"""Training: the engine (one loop for every task) and its task interface, with AdamW, the schedule,
clipping, guards, signals, the run log and the campaign loop of many runs.

The face also names the checkpoint functions of the run format (:mod:`seqlab.runs`) and the loss;
the language model's ``train``, ``Trainer``, ``TrainConfig`` and ``get_batch`` sit a layer up, in
:mod:`seqlab.lm`. Names load on first use (see seqlab/lazy.py), so ``seqlab --help`` does not
import torch.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.training.engine": ("Engine",),
    "seqlab.training.task": ("Batch", "Drawn", "Task"),
    "seqlab.training.result": ("TrainResult",),
    "seqlab.training.guards": ("NonFiniteLossError",),
    "seqlab.training.clipping": ("clip_grad_norm",),
    "seqlab.training.optimizer": ("AdamW",),
    "seqlab.training.schedule": ("lr_cosine_schedule",),
    "seqlab.model.loss": ("cross_entropy",),
    "seqlab.runs.checkpoint": ("load_checkpoint", "load_model_from_checkpoint", "read_checkpoint", "save_checkpoint"),
    "seqlab.tokenizer.token_array": ("load_tokens",),
})
