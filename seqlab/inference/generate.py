"""Sampling text from a TransformerLM, with a KV cache for incremental decoding.

``generate(model, prompt_ids, max_new_tokens, ...)`` samples continuations; ``generate_stream``
yields them one id at a time. The prompt is prefilled once into the KV cache, then each step feeds
only the newest token. When a row's window is full it slides: its last ``keep = context_length -
slide`` tokens are re-prefilled (``slide`` defaults to a quarter of the context, so a full forward
happens once every ``slide`` tokens); each row slides on its own (seqlab/inference/windows.py).
``use_cache=False`` recomputes the same windows in full and gives the same logits.
``static_cache=True`` decodes through a cache allocated once, and ``compile=True`` compiles that
step with ``mode="reduce-overhead"`` (CUDA graphs: one launch per token, as at batch 1 the GPU
otherwise waits for the host); outputs equal the dynamic cache's.

    generate(model, prompt, 256, temperature=0, compile=True)   # static cache + CUDA graphs
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence

import torch

from seqlab.inference.sampling import check_sampling_args, sample_next
from seqlab.inference.windows import RowWindows, StaticRowWindows
from seqlab.model import TransformerLM
from seqlab.model.embedding import check_token_ids


def _validate(model: TransformerLM, prompts: list[list[int]], max_new_tokens: int, slide: int | None,
              temperature: float, top_p: float, top_k: int | None, single: bool = False, *,
              use_cache: bool = True, static_cache: bool = False, compile: bool | str = False) -> int:
    """Check every argument before any model work; prompt ids become ints in place. Returns `keep`,
    the tokens re-prefilled when the window slides. ``single``: errors say "the prompt", not
    "prompt row i"."""
    ctx = model.config.context_length
    vocab = model.config.vocab_size
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    check_sampling_args(temperature, top_p, top_k)
    if compile and not static_cache:
        raise ValueError("compile=True needs the static cache (static_cache=True or None): a compiled step "
                         "needs the same shapes at every token")
    if static_cache and not use_cache:
        raise ValueError("static_cache=True is a KV cache; it cannot go with use_cache=False")
    for i, row in enumerate(prompts):
        name = "the prompt" if single else f"prompt row {i}"
        if not row:
            raise ValueError(f"{name} is empty; give at least one token id (e.g. the tokenizer's "
                             "<|endoftext|> id to start a new document)")
        for j, token in enumerate(row):
            try:
                row[j] = operator.index(token)
            except TypeError:
                raise ValueError(f"{name}, position {j}: {token!r} is not an integer id") from None
            if not -2 ** 63 <= row[j] < 2 ** 63:
                raise ValueError(f"{name}, position {j}: id {row[j]} does not fit a 64-bit integer")
        check_token_ids(torch.tensor(row), vocab, name)
    slide = max(1, ctx // 4) if slide is None else slide
    if not 1 <= slide <= ctx - 1 and ctx > 1:
        raise ValueError(f"slide must be in [1, context_length - 1 = {ctx - 1}], got {slide}")
    return max(1, ctx - slide)


def _decode(model: TransformerLM, prompts: list[list[int]], max_new_tokens: int, temperature: float,
            top_p: float, top_k: int | None, eos_id: int | None, seed: int | None,
            use_cache: bool, slide: int | None, single: bool = False, static_cache: bool | None = None,
            compile: bool | str = False) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Validate everything now; return an iterator yielding (next_ids (batch,), finished (batch,)
    bool before this token) once per step."""
    static = bool(compile) if static_cache is None else static_cache
    keep = _validate(model, prompts, max_new_tokens, slide, temperature, top_p, top_k, single,
                     use_cache=use_cache, static_cache=static, compile=compile)
    return _steps(model, prompts, max_new_tokens, temperature, top_p, top_k, eos_id, seed, use_cache, keep,
                  static, compile)


def _steps(model: TransformerLM, prompts: list[list[int]], max_new_tokens: int, temperature: float,
           top_p: float, top_k: int | None, eos_id: int | None, seed: int | None, use_cache: bool,
           keep: int, static: bool = False, compile: bool | str = False) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    if max_new_tokens == 0:
        return
    ctx = model.config.context_length
    device = next(model.parameters()).device
    generator = None
    if seed is not None:
        generator = torch.Generator(device=device)
        generator.manual_seed(seed)
    # each row's tokens inside its first window (a prompt longer than the context keeps its end)
    windows = [row[-keep:] if len(row) > ctx else row for row in prompts]
    finished = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    with torch.no_grad():
        if static:
            rows = StaticRowWindows(model, windows, max_new_tokens - 1, keep, compile)
        else:
            rows = RowWindows(model, windows, max_new_tokens - 1, keep, use_cache)
        logits = rows.prefill()
        for step in range(max_new_tokens):
            next_ids = sample_next(logits, temperature, top_p, top_k, generator)
            yield next_ids, finished.clone()
            if eos_id is not None:
                finished |= next_ids == eos_id
                if bool(finished.all()):  # the one read-back, only when an eos id can stop rows
                    return
            if step < max_new_tokens - 1:
                logits = rows.advance(next_ids)


def generate(model: TransformerLM, prompt_ids: Sequence[int] | Sequence[Sequence[int]] | torch.Tensor,
             max_new_tokens: int, temperature: float = 1.0, top_p: float = 1.0,
             top_k: int | None = None, eos_id: int | None = None, seed: int | None = None, *,
             use_cache: bool = True, slide: int | None = None, static_cache: bool | None = None,
             compile: bool | str = False) -> list[int] | list[list[int]]:
    """Sample up to ``max_new_tokens`` new ids after each prompt.

    prompt_ids: list[int] (one prompt) -> list[int] of new ids; or list[list[int]] (a batch of
    prompts of any lengths) -> list[list[int]]. Each row of a batch gets exactly what it would get
    alone: rows are left-padded and each slides its own window (module docstring).
    temperature: 0 = greedy; otherwise logits / temperature. top_k: keep the k most likely tokens
    (0 or None: all).
    top_p: nucleus, the smallest set of most likely tokens with cumulative probability >= top_p.
    Filters apply in that order, each renormalizing. A row stops after emitting ``eos_id`` (which is
    included as its last id) or at the limit. ``seed`` makes sampling reproducible (a
    torch.Generator on the model's device). ``use_cache=False`` recomputes every step in full (the
    reference path); ``slide`` sets how far the window slides past the context (module docstring).
    ``static_cache``: decode through a preallocated cache (default: when compiling); ``compile``:
    compile the decoding step once (True: CUDA graphs on CUDA; or a torch.compile backend, by name
    such as "aot_eager" or a callable); the first call per batch size pays the compilation.
    """
    prompts, single = _as_prompts(prompt_ids)
    steps = list(_decode(model, prompts, max_new_tokens, temperature, top_p, top_k, eos_id, seed,
                         use_cache, slide, single, static_cache, compile))
    outputs: list[list[int]] = [[] for _ in prompts]
    if steps:  # read the ids back once, at the end: (batch, steps)
        ids = torch.stack([next_ids for next_ids, _ in steps], dim=1).tolist()
        done = torch.stack([finished for _, finished in steps], dim=1).tolist()
        outputs = [[t for t, d in zip(row, row_done) if not d] for row, row_done in zip(ids, done)]
    return outputs[0] if single else outputs


def _as_prompts(prompt_ids: Sequence[int] | Sequence[Sequence[int]] | torch.Tensor) -> tuple[list[list[int]], bool]:
    """(list of prompt rows, whether one prompt was given). An empty sequence counts as one empty
    prompt, so it is refused by name instead of quietly giving []."""
    if hasattr(prompt_ids, "tolist"):  # a tensor or array of ids
        prompt_ids = prompt_ids.tolist()
    single = len(prompt_ids) == 0 or not isinstance(prompt_ids[0], (list, tuple))
    return ([list(prompt_ids)] if single else [list(p) for p in prompt_ids]), single


def generate_stream(model: TransformerLM, prompt_ids: Sequence[int], max_new_tokens: int, temperature: float = 1.0,
                    top_p: float = 1.0, top_k: int | None = None, eos_id: int | None = None,
                    seed: int | None = None, *, use_cache: bool = True, slide: int | None = None,
                    static_cache: bool | None = None, compile: bool | str = False) -> Iterator[int]:
    """Like ``generate`` for one prompt, yielding each new id as soon as it is sampled.

    Every argument is checked when this is called (a bad one raises here, before the caller prints
    anything), not at the first ``next()``."""
    steps = _decode(model, [list(prompt_ids)], max_new_tokens, temperature, top_p, top_k, eos_id, seed,
                    use_cache, slide, single=True, static_cache=static_cache, compile=compile)
    return (int(next_ids[0]) for next_ids, _ in steps)
