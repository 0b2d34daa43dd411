"""What every measurement of seqlab.interpret checks and decides first: which family the model
belongs to, the prompt's ids, a token id or position, and (decided here once) the default target,
the model's own top token.

A model is read through its taps (seqlab.model.taps) only, so any TransformerLM (any norm, norm
position, positional scheme or number of key/value heads) and any seq2seq model can be measured.
"""

from __future__ import annotations

import torch

from seqlab.model import TransformerLM
from seqlab.model.embedding import check_token_ids
from seqlab.runs import unwrap_model

# a prediction this sure leaves nothing for a log-probability to lose (seqlab.interpret.notes)
SATURATED = 0.999


def check_lm(model) -> TransformerLM:
    """The plain TransformerLM inside torch.compile / DDP wrappers, or a TypeError naming what it got."""
    model = unwrap_model(model)
    if not isinstance(model, TransformerLM):
        raise TypeError(f"this measurement reads a language model (seqlab.model.TransformerLM), got "
                        f"{type(model).__name__}; for an encoder-decoder use the seq2seq functions "
                        "(seqlab.interpret.seq2seq)")
    return model


def model_device(model) -> torch.device:
    return next(model.parameters()).device


def check_finite_weights(model) -> None:
    """A ValueError naming the first parameter that holds NaN or infinity: such a run's every
    answer would be NaN (the explorer refuses it too)."""
    for name, parameter in unwrap_model(model).named_parameters():
        if not bool(torch.isfinite(parameter).all()):
            raise ValueError(f"the model's weights are damaged: {name} holds NaN or infinity, so every "
                             "measurement would be NaN; retrain the run (or resume it from an earlier checkpoint)")


def as_batch(model: TransformerLM, ids, name: str = "ids") -> torch.Tensor:
    """ids (seq,) or (batch, seq), a list or tensor, as a (batch, seq) long tensor on the model's
    device, checked against the vocabulary and the context length."""
    ids = torch.as_tensor(ids, device=model_device(model))
    if ids.dim() == 1:
        ids = ids[None]
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty sequence of token ids, shape (seq,) or (batch, seq); "
                         f"got shape {tuple(ids.shape)}")
    check_token_ids(ids, model.config.vocab_size, name)
    ids = ids.long()
    if ids.shape[1] > model.config.context_length:
        raise ValueError(f"{name} has {ids.shape[1]} tokens, more than the model's context_length "
                         f"{model.config.context_length}; shorten the prompt")
    return ids


def check_token(vocab_size: int, token, name: str) -> int:
    """``token`` as an int if it is a vocabulary id, else a ValueError naming ``name``."""
    if isinstance(token, torch.Tensor):
        token = token.item()
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError(f"{name} must be a token id (an int), got {token!r}")
    if not -2 ** 63 <= token < 2 ** 63:
        raise ValueError(f"{name}: id {token} does not fit a 64-bit integer")
    check_token_ids(torch.tensor(token), vocab_size, name)
    return token


def check_position(position, seq: int, name: str = "position") -> int:
    """``position`` (negative counts from the end) as an index in [0, seq), else a ValueError."""
    if isinstance(position, bool) or not isinstance(position, int):
        raise TypeError(f"{name} must be an int, got {position!r}")
    if not -seq <= position < seq:
        raise ValueError(f"{name} {position} is out of range for a prompt of {seq} tokens "
                         f"(valid: {-seq}..{seq - 1})")
    return position % seq


def choose_target(logits: torch.Tensor, target: int | None, vocab_size: int, name: str = "target") -> int:
    """The one place the default target is decided: ``target`` if given (checked), else the top
    token of ``logits`` (vocab,), the model's own prediction there."""
    if target is None:
        return int(logits.argmax())
    return check_token(vocab_size, target, name)


def choose_pair(clean_logits: torch.Tensor, corrupt_logits: torch.Tensor, target: int | None,
                baseline: int | None, vocab_size: int) -> tuple[int, int]:
    """The target and baseline of a patching experiment: by default the clean prompt's top token and
    the corrupted prompt's (or, where both prompts predict the same token, the clean prompt's
    second), so that their logit difference moves between the two runs."""
    target = choose_target(clean_logits, target, vocab_size)
    if baseline is None:
        baseline = int(corrupt_logits.argmax())
        if baseline == target:
            baseline = int(clean_logits.topk(2).indices[1])
    else:
        baseline = check_token(vocab_size, baseline, "baseline")
    if baseline == target:
        raise ValueError(f"the target and the baseline are the same token ({target}), so their logit difference is "
                         "0 on both prompts: name two different tokens")
    return target, baseline
