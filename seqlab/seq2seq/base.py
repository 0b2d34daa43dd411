"""What every encoder-decoder offers, whatever is inside: the interface decoding and inspection use.

A model reads a source batch once (`encode`) into a decoder state, then produces the target one
token at a time (`decode_step`), or all target positions at once under teacher forcing
(`forward`). Beam search keeps several hypotheses per source as extra batch rows and reorders
them with `state.select(rows)`.

    state = model.encode(src_ids, src_padding_mask)        # source read once
    logits, state = model.decode_step(state, tokens)       # tokens (B,) -> logits (B, tgt_vocab)

Masks are bool with True = real token (the opposite of torch.nn.Transformer's key_padding_mask).
"""

from __future__ import annotations

import torch
from torch import nn

from seqlab.seq2seq.config import Seq2SeqConfig


def check_ids(ids: torch.Tensor, name: str) -> None:
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, length), got {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.dtype == torch.bool or ids.is_complex():
        raise TypeError(f"{name} must be an integer tensor of token ids, got dtype {ids.dtype}")


def check_mask(mask: torch.Tensor | None, ids: torch.Tensor, name: str) -> torch.Tensor | None:
    """None, or a bool (batch, length) mask matching ids' shape; returned as bool."""
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True = real token), got dtype {mask.dtype}")
    if tuple(mask.shape) != tuple(ids.shape):
        raise ValueError(f"{name} has shape {tuple(mask.shape)} but the ids have shape {tuple(ids.shape)}")
    return mask


def check_batch(src_ids, tgt_ids, src_padding_mask, tgt_padding_mask):
    """Validate a (source, decoder input) batch; returns the two masks (None stays None)."""
    check_ids(src_ids, "src_ids")
    check_ids(tgt_ids, "tgt_ids")
    if src_ids.shape[0] != tgt_ids.shape[0]:
        raise ValueError(f"src_ids has batch {src_ids.shape[0]} but tgt_ids has batch {tgt_ids.shape[0]}")
    return (check_mask(src_padding_mask, src_ids, "src_padding_mask"),
            check_mask(tgt_padding_mask, tgt_ids, "tgt_padding_mask"))


class Seq2SeqModel(nn.Module):
    """Base class: `config`, `forward`, `encode`, `decode_step`.

    ``forward(..., taps=Taps(...))`` reads or replaces named activations (seqlab.model.taps: the
    source and target embeddings ``encoder.embed`` and ``decoder.embed``, the encoder's states and
    output, the decoder's states or layers, the cross-attention weights, the context vector, the
    output layer's input ``decoder.output``); seqlab.interpret measures the models through them."""

    config: Seq2SeqConfig

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor, src_padding_mask: torch.Tensor | None = None,
                tgt_padding_mask: torch.Tensor | None = None, *, return_hidden: bool = False,
                taps=None) -> torch.Tensor:
        """src_ids (B, S), tgt_ids (B, T) = BOS + target[:-1] -> logits (B, T, tgt_vocab_size).

        return_hidden: the decoder's last hidden states (B, T, d) instead, the lm_head's input:
        logits = hidden @ lm_head.weight.T (the training engine's fused loss reads them).
        taps: a seqlab.model.taps.Taps (its points: seqlab.model.taps.POINTS)."""
        src_padding_mask, tgt_padding_mask = check_batch(src_ids, tgt_ids, src_padding_mask, tgt_padding_mask)
        return self._forward(src_ids, tgt_ids, src_padding_mask, tgt_padding_mask, return_hidden, taps)

    def _forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor, src_padding_mask: torch.Tensor | None,
                 tgt_padding_mask: torch.Tensor | None, return_hidden: bool, taps) -> torch.Tensor:
        raise NotImplementedError

    def encode(self, src_ids: torch.Tensor, src_padding_mask: torch.Tensor | None = None):
        raise NotImplementedError

    def decode_step(self, state, tokens: torch.Tensor):
        raise NotImplementedError

    @property
    def max_target_length(self) -> int | None:
        """Longest decoder input the model can take (None: unlimited, as for the RNNs)."""
        return None
