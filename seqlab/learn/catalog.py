"""Every Implement exercise by name: the NumPy labs' (numpy_exercises) and the LM components'
(torch_exercises, which import torch only when one of them is asked for)."""

from __future__ import annotations

NUMPY_NAMES = (
    "scalar_recurrence", "scalar_recurrence_backward", "rnn_step", "rnn_forward", "rnn_bptt",
    "softmax_cross_entropy", "truncated_bptt", "clip_global_norm", "lstm_cell_forward", "lstm_bptt",
    "gru_cell_forward", "gru_bptt", "causal_mask", "attention", "attention_backward", "multihead_attention",
    "choose_merge", "train_bpe",
)
TORCH_NAMES = ("softmax", "rms_norm", "rotate_pairs", "scaled_dot_product_attention", "cross_entropy",
               "lr_cosine_schedule", "adamw_step", "get_batch", "causal_multihead_self_attention", "swiglu",
               "transformer_block", "transformer_lm")


def exercise(name: str):
    """The exercise called ``name``, or None."""
    if name in NUMPY_NAMES:
        from seqlab.learn.numpy_exercises import EXERCISES
    elif name in TORCH_NAMES:
        from seqlab.learn.torch_exercises import EXERCISES
    else:
        return None
    return next((e for e in EXERCISES if e.name == name), None)


def all_exercises() -> list:
    from seqlab.learn.numpy_exercises import EXERCISES as numpy_exercises
    from seqlab.learn.torch_exercises import EXERCISES as torch_exercises
    return [*numpy_exercises, *torch_exercises]
