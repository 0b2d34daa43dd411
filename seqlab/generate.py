"""Sampling text from a TransformerLM, with a KV cache for incremental decoding.

``generate(model, prompt_ids, max_new_tokens, ...)`` samples continuations; ``generate_stream``
yields them one id at a time. ``seqlab generate`` streams decoded text to the terminal.

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

import argparse
import operator
import sys
from collections.abc import Iterator
from typing import Any


# ---------------------------------------------------------------- sampling filters

def top_k_mask(logits, k: int):
    """(..., vocab) -> bool mask keeping exactly the k largest logits per row (ties by index order
    of ``torch.topk``). k >= vocab keeps everything."""
    import torch

    if k <= 0:
        raise ValueError(f"top_k must be a positive integer, got {k}")
    if k >= logits.shape[-1]:
        return torch.ones_like(logits, dtype=torch.bool)
    keep = torch.zeros_like(logits, dtype=torch.bool)
    return keep.scatter(-1, torch.topk(logits, k, dim=-1).indices, True)


def top_p_mask(probs, p: float):
    """Nucleus (Holtzman et al. 2020): per row, the smallest set of most probable tokens whose
    cumulative probability is >= p. probs (..., vocab) -> bool mask. The top token is always kept."""
    import torch

    if not 0.0 < p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {p}")
    if p >= 1.0:
        return torch.ones_like(probs, dtype=torch.bool)
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
    # a token is needed while the mass of the tokens before it is still short of p
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    keep_sorted = mass_before < p
    keep_sorted[..., 0] = True
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def next_token_distribution(logits, temperature: float = 1.0, top_p: float = 1.0,
                            top_k: int | None = None):
    """(batch, vocab) logits -> (batch, vocab) probabilities after temperature, top-k, then top-p
    (each filter renormalizes). temperature must be > 0 here (0 means greedy, see sample_next)."""
    import torch

    from seqlab.model import softmax

    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for a distribution, got {temperature}")
    scaled = logits.float() / temperature
    if top_k is not None:
        scaled = scaled.masked_fill(~top_k_mask(scaled, top_k), float("-inf"))
    probs = softmax(scaled, dim=-1)
    if top_p < 1.0:
        probs = torch.where(top_p_mask(probs, top_p), probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def sample_next(logits, temperature: float = 1.0, top_p: float = 1.0, top_k: int | None = None,
                generator=None):
    """(batch, vocab) logits -> (batch,) next ids. temperature 0 = greedy (argmax)."""
    import torch

    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = next_token_distribution(logits, temperature, top_p, top_k)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


# ---------------------------------------------------------------- decoding loop

def _left_pad(rows: list[list[int]], device):
    """Left-pad rows to one length -> ids (batch, n), padding_mask (batch, n), positions (batch, n).

    Positions count real tokens only (0 at each row's first real token), so a padded row sees the
    same RoPE positions as it would alone."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row):] = True
    positions = (mask.long().cumsum(dim=1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device)


def _validate(model, prompts: list[list[int]], max_new_tokens: int, slide: int | None,
              temperature: float, top_p: float, top_k: int | None) -> int:
    """Check every argument before any model work; prompt ids become ints in place. Returns `keep`,
    the tokens re-prefilled when the window slides."""
    ctx = model.config.context_length
    vocab = model.config.vocab_size
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k <= 0:
        raise ValueError(f"top_k must be a positive integer, got {top_k}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
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


def _decode(model, prompts: list[list[int]], max_new_tokens: int, temperature: float,
            top_p: float, top_k: int | None, eos_id: int | None, seed: int | None,
            use_cache: bool, slide: int | None) -> Iterator[tuple[Any, Any]]:
    """Yield (next_ids (batch,), finished (batch,) bool before this token) once per step."""
    import torch

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

    def full_forward():
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


def generate(model, prompt_ids, max_new_tokens: int, temperature: float = 1.0, top_p: float = 1.0,
             top_k: int | None = None, eos_id: int | None = None, seed: int | None = None, *,
             use_cache: bool = True, slide: int | None = None):
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


def generate_stream(model, prompt_ids: list[int], max_new_tokens: int, temperature: float = 1.0,
                    top_p: float = 1.0, top_k: int | None = None, eos_id: int | None = None,
                    seed: int | None = None, *, use_cache: bool = True,
                    slide: int | None = None) -> Iterator[int]:
    """Like ``generate`` for one prompt, yielding each new id as soon as it is sampled."""
    for next_ids, _ in _decode(model, [list(prompt_ids)], max_new_tokens, temperature, top_p,
                               top_k, eos_id, seed, use_cache, slide):
        yield int(next_ids[0])


# ---------------------------------------------------------------- CLI

def add_model_source(parser: argparse.ArgumentParser) -> None:
    """--run DIR | --checkpoint PATH, shared by `seqlab generate` and `seqlab eval`."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", metavar="DIR", help="run directory (uses checkpoints/latest.pt)")
    source.add_argument("--checkpoint", metavar="PATH", help="a checkpoint file")
    parser.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:N, mps or auto (default cpu)")


def load_model(args: argparse.Namespace):
    """(model, payload, run_dir or None) from --run / --checkpoint, in eval mode."""
    import os

    from seqlab.training.checkpoint import load_model_from_checkpoint
    from seqlab.training.trainer import resolve_device

    if args.run:
        path = os.path.join(args.run, "checkpoints", "latest.pt")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{args.run}: no checkpoints/latest.pt (is it a `seqlab train` run?)")
    else:
        path = args.checkpoint
        if not os.path.isfile(path):
            raise FileNotFoundError(f"checkpoint {path} does not exist")
    model, payload = load_model_from_checkpoint(path, device=resolve_device(args.device))
    model.eval()
    return model, payload, args.run


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("generate", help="sample text from a trained model",
                              description="Sample a continuation of --prompt, streamed as it is produced.")
    add_model_source(p)
    p.add_argument("--tokenizer", metavar="DIR", help="tokenizer directory (default: RUN/tokenizer)")
    p.add_argument("--prompt", default="", help="text to continue (default: start of a document)")
    p.add_argument("--max-tokens", type=int, default=256, help="new tokens at most (256)")
    p.add_argument("--temperature", type=float, default=1.0, help="0 = greedy (default 1.0)")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus mass (default 1.0 = off)")
    p.add_argument("--top-k", type=int, default=None, help="keep the k most likely tokens")
    p.add_argument("--seed", type=int, default=None, help="seed for reproducible sampling")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import os

    try:
        from seqlab.tokenizer import Tokenizer

        model, _, run = load_model(args)
        tok_dir = args.tokenizer or (os.path.join(run, "tokenizer") if run else None)
        if tok_dir is None:
            raise ValueError("--checkpoint needs --tokenizer DIR to turn text into ids")
        if not os.path.isdir(tok_dir):
            raise FileNotFoundError(f"tokenizer directory {tok_dir} does not exist")
        tokenizer = Tokenizer.load(tok_dir)
        eos = tokenizer.eot_id
        prompt = tokenizer.encode(args.prompt) if args.prompt else []
        if not prompt:
            if eos is None:
                raise ValueError("empty --prompt and the tokenizer has no <|endoftext|> to start from")
            prompt = [eos]
        if tokenizer.vocab_size > model.config.vocab_size:
            raise ValueError(f"tokenizer has {tokenizer.vocab_size} ids but the model only "
                             f"{model.config.vocab_size}")
        stream = generate_stream(model, prompt, args.max_tokens, args.temperature, args.top_p,
                                 args.top_k, eos, args.seed)
        decoder = tokenizer.stream_decoder()
        out = sys.stdout
        out.write(args.prompt)
        out.flush()
        for token in stream:
            if token == eos:
                break
            out.write(decoder.feed(token))
            out.flush()
        out.write(decoder.finish() + "\n")
        out.flush()
    except (ValueError, FileNotFoundError, KeyError, RuntimeError) as exc:
        print(f"seqlab generate: error: {exc}", file=sys.stderr)
        return 2
    return 0
