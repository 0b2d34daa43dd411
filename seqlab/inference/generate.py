"""Sampling text from a TransformerLM, with a KV cache for incremental decoding.

``generate(model, prompt_ids, max_new_tokens, ...)`` samples continuations; ``generate_stream``
yields them one id at a time. ``seqlab generate`` (seqlab/inference/cli.py) streams decoded text to the terminal.

How a step works: the prompt is run once ("prefill"), filling the model's KV cache with every
layer's keys and values; each later step feeds only the newest token, whose query attends to the
cached keys. That turns each step from O(window) token computations into O(1).

Sliding window: the model only knows positions 0..context_length-1. When the next token would
not fit (cache length == context_length), the window slides: the cache is dropped and the last
``keep = context_length - slide`` tokens are re-prefilled at positions 0..keep-1, then decoding
continues one token at a time until the window is full again. ``slide`` defaults to a quarter of
the context, so a re-prefill (one full forward) happens once every ``slide`` tokens rather than on
every token, and every token still sees at least ``keep`` tokens of context. Without the cache
(``use_cache=False``) the same windows are recomputed in full at every step, so both paths give
the same logits.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence

import torch

from seqlab.inference.sampling import check_sampling_args, sample_next
from seqlab.model import TransformerLM


def _left_pad(rows: list[list[int]], device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Left-pad rows to one length -> ids (batch, n), padding_mask (batch, n), positions (batch, n).

    Positions count real tokens only (0 at each row's first real token), so a padded row sees the
    same RoPE positions as it would alone."""
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row):] = True
    positions = (mask.long().cumsum(dim=1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device)


def _validate(model: TransformerLM, prompts: list[list[int]], max_new_tokens: int, slide: int | None,
              temperature: float, top_p: float, top_k: int | None) -> int:
    """Check every argument before any model work; prompt ids become ints in place. Returns `keep`,
    the tokens re-prefilled when the window slides."""
    ctx = model.config.context_length
    vocab = model.config.vocab_size
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    check_sampling_args(temperature, top_p, top_k)
    for i, row in enumerate(prompts):
        if not row:
            raise ValueError(f"prompt {i} is empty; give at least one token (e.g. <|endoftext|>)")
        for j, token in enumerate(row):
            try:
                row[j] = operator.index(token)
            except TypeError:
                raise ValueError(f"prompt {i} position {j}: {token!r} is not an integer id") from None
            if not 0 <= row[j] < vocab:
                raise ValueError(f"prompt {i} position {j}: id {token!r} outside the vocabulary [0, {vocab})")
    slide = max(1, ctx // 4) if slide is None else slide
    if not 1 <= slide <= ctx - 1 and ctx > 1:
        raise ValueError(f"slide must be in [1, context_length - 1 = {ctx - 1}], got {slide}")
    return max(1, ctx - slide)


def _decode(model: TransformerLM, prompts: list[list[int]], max_new_tokens: int, temperature: float,
            top_p: float, top_k: int | None, eos_id: int | None, seed: int | None,
            use_cache: bool, slide: int | None) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield (next_ids (batch,), finished (batch,) bool before this token) once per step."""
    keep = _validate(model, prompts, max_new_tokens, slide, temperature, top_p, top_k)
    if max_new_tokens == 0:
        return
    ctx = model.config.context_length
    device = next(model.parameters()).device
    generator = None
    if seed is not None:
        generator = torch.Generator(device=device)
        generator.manual_seed(seed)

    # each row's tokens inside the current window (what the model conditions on)
    windows = [list(row[-keep:]) if len(row) > ctx else list(row) for row in prompts]
    finished = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    cache = None

    def full_forward() -> torch.Tensor:
        nonlocal cache
        ids, mask, positions = _left_pad(windows, device)
        cache = model.new_kv_cache() if use_cache else None
        return model(ids, token_positions=positions, kv_cache=cache, padding_mask=mask)[:, -1]

    with torch.no_grad():
        logits = full_forward()
        for step in range(max_new_tokens):
            next_ids = sample_next(logits, temperature, top_p, top_k, generator)
            yield next_ids, finished.clone()
            if eos_id is not None:
                finished |= next_ids == eos_id
            if step == max_new_tokens - 1 or bool(finished.all()):
                return
            new = next_ids.tolist()
            for row, token in zip(windows, new):
                row.append(token)
            if max(len(row) for row in windows) > ctx:  # slide: re-prefill the last `keep` tokens
                windows = [row[-keep:] for row in windows]
                logits = full_forward()
            elif use_cache:
                positions = torch.tensor([[len(row) - 1] for row in windows], device=device)
                logits = model(next_ids[:, None], token_positions=positions, kv_cache=cache)[:, -1]
            else:
                logits = full_forward()


def generate(model: TransformerLM, prompt_ids: Sequence[int] | Sequence[Sequence[int]] | torch.Tensor,
             max_new_tokens: int, temperature: float = 1.0, top_p: float = 1.0,
             top_k: int | None = None, eos_id: int | None = None, seed: int | None = None, *,
             use_cache: bool = True, slide: int | None = None) -> list[int] | list[list[int]]:
    """Sample up to ``max_new_tokens`` new ids after each prompt.

    prompt_ids: list[int] (one prompt) -> list[int] of new ids; or list[list[int]] (a batch of
    prompts of any lengths, left-padded internally with a padding mask and per-row positions)
    -> list[list[int]].
    temperature: 0 = greedy; otherwise logits / temperature. top_k: keep the k most likely tokens.
    top_p: nucleus, the smallest set of most likely tokens with cumulative probability >= top_p.
    Filters apply in that order, each renormalizing. A row stops after emitting ``eos_id`` (which is
    included as its last id) or at the limit. ``seed`` makes sampling reproducible (a
    torch.Generator on the model's device). ``use_cache=False`` recomputes every step in full (the
    reference path); ``slide`` sets how far the window slides past the context (module docstring).
    """
    if hasattr(prompt_ids, "tolist"):  # a tensor or array of ids
        prompt_ids = prompt_ids.tolist()
    single = len(prompt_ids) > 0 and not isinstance(prompt_ids[0], (list, tuple))
    prompts = [list(prompt_ids)] if single else [list(p) for p in prompt_ids]
    if not prompts:
        return []
    outputs: list[list[int]] = [[] for _ in prompts]
    for next_ids, finished in _decode(model, prompts, max_new_tokens, temperature, top_p, top_k,
                                      eos_id, seed, use_cache, slide):
        for i, (token, done) in enumerate(zip(next_ids.tolist(), finished.tolist())):
            if not done:
                outputs[i].append(token)
    return outputs[0] if single else outputs


def generate_stream(model: TransformerLM, prompt_ids: Sequence[int], max_new_tokens: int, temperature: float = 1.0,
                    top_p: float = 1.0, top_k: int | None = None, eos_id: int | None = None,
                    seed: int | None = None, *, use_cache: bool = True,
                    slide: int | None = None) -> Iterator[int]:
    """Like ``generate`` for one prompt, yielding each new id as soon as it is sampled."""
    for next_ids, _ in _decode(model, [list(prompt_ids)], max_new_tokens, temperature, top_p,
                               top_k, eos_id, seed, use_cache, slide):
        yield int(next_ids[0])
