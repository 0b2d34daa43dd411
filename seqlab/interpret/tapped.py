"""One forward pass of any seqlab model with every (or the named) tap point kept:
``logits, cache = run_with_cache(model, ids)`` for a language model, ``run_with_cache(model,
src_ids, tgt_ids)`` for an encoder-decoder (tgt_ids = BOS + the target). The cache is a
seqlab.model.taps.ActivationCache: ``cache["layers.0.attn.pattern"]``, and for the LM also
TransformerLens's names, ``cache["blocks.0.attn.hook_pattern"]``.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from seqlab.interpret.inputs import as_batch, model_device
from seqlab.model import TransformerLM
from seqlab.model.taps import ActivationCache, Taps
from seqlab.runs import unwrap_model


def run_with_cache(model, *inputs, names: bool | Iterable[str] = True) -> tuple[torch.Tensor, ActivationCache]:
    """(logits, cache) of one forward pass without gradients.

    names: True for every point, or the names / ``*`` patterns to keep (seqlab.model.taps.POINTS).

    Example::

        logits, cache = run_with_cache(model, [5, 9, 5])
        cache["layers.1.resid_post"].shape      # (1, 3, d_model)
        cache["pattern", 0]                     # TransformerLens's short name: layer 0's attention
    """
    from seqlab.seq2seq.base import Seq2SeqModel

    model = unwrap_model(model)
    if not isinstance(model, (TransformerLM, Seq2SeqModel)):
        raise TypeError(f"run_with_cache reads a seqlab TransformerLM or encoder-decoder, got {type(model).__name__}")
    taps = Taps(read=True if names is True else list(names))
    with torch.no_grad():
        if isinstance(model, TransformerLM):
            if len(inputs) != 1:
                raise TypeError("a language model reads one input: run_with_cache(model, ids)")
            logits = model(as_batch(model, inputs[0]), taps=taps)
        else:
            if len(inputs) != 2:
                raise TypeError("an encoder-decoder reads a source and a decoder input: "
                                "run_with_cache(model, src_ids, tgt_ids)")
            src, tgt = (torch.as_tensor(x, device=model_device(model)) for x in inputs)
            logits = model(src[None] if src.dim() == 1 else src, tgt[None] if tgt.dim() == 1 else tgt, taps=taps)
    return logits, taps.cache
