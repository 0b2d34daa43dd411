"""Per-row sliding windows: decoding a batch of prompts, each row as if it were alone.

Every row conditions on a window, its last n tokens at positions 0..n-1. When a row would outgrow
the context, THAT row slides: its last ``keep`` tokens are re-prefilled at positions 0..keep-1 and
the other rows are untouched, so each row gets the logits it would get alone. Rows are
right-aligned: the newest token of every row shares a column, and the KV cache holds each row's
keys in its last n columns, the rest masked as padding. Window lengths do not depend on sampled
tokens, so :func:`iter_slides` plans every step's sliding rows ahead: the loop never reads a value
back from the device, and nothing loops over rows per token. The schedule is planned
``context_length`` steps at a time and ``history`` holds at most two contexts, so memory and the
first token's latency do not grow with the number of tokens requested.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

import numpy as np
import torch

from seqlab.model import KVCache, StaticKVCache, TransformerLM


@dataclass(frozen=True)
class SlideStep:
    """What one decoding step does. ``rows``: the rows that slide (indices into the batch);
    ``kept_columns``: cache columns the other rows still need (their longest window);
    ``width``: the longest window after the step."""

    rows: np.ndarray
    kept_columns: int
    width: int


def iter_slides(lengths: list[int], context_length: int, keep: int) -> Iterator[SlideStep]:
    """The slide schedule of windows that start ``lengths`` long, one :class:`SlideStep` per
    decoding step, for as many steps as are asked for (an endless generator)."""
    current = np.array(lengths, dtype=np.int64)
    while True:
        grown = current + 1
        rows = np.flatnonzero(grown > context_length)
        staying = np.delete(current, rows)
        grown[rows] = keep
        yield SlideStep(rows, int(staying.max()) if len(staying) else 0, int(grown.max()))
        current = grown


def plan_slides(lengths: list[int], steps: int, context_length: int, keep: int) -> list[SlideStep]:
    """The first ``steps`` steps of :func:`iter_slides`.

    Example: lengths [7, 5], context 8, keep 6 -> step 0 slides no row, step 1 slides row 0 (its
    window reached 9 > 8), step 3 slides row 1 (5 + 4 = 9)."""
    return list(islice(iter_slides(lengths, context_length, keep), steps))


def left_pad(rows: list[list[int]], device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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


def right_aligned_mask(lengths: torch.Tensor, width: int) -> torch.Tensor:
    """(batch,) window lengths -> (batch, width) bool, True on each row's last ``length`` columns."""
    columns = torch.arange(width, device=lengths.device)
    return columns >= (width - lengths)[:, None]


class RowWindows:
    """The windows of a batch of rows and the KV cache over them (``use_cache=False``: none; every
    step then recomputes every window in full, the reference path).

    ``prefill()`` gives the first next-token logits (batch, vocab); ``advance(next_ids)`` appends
    one sampled id per row and gives the logits after it. Call ``advance`` at most ``steps`` times;
    ``steps`` may be huge, nothing is allocated or planned for it up front (module docstring).
    """

    def __init__(self, model: TransformerLM, windows: list[list[int]], steps: int, keep: int,
                 use_cache: bool = True):
        self.model, self.keep, self.use_cache = model, keep, use_cache
        self.context_length = ctx = model.config.context_length
        device = next(model.parameters()).device
        start = [len(w) for w in windows]
        self.width = max(start)
        self.end = self.width  # history column after every row's newest token
        # room for the widest window plus one chunk of steps; compacted when full (_append)
        self.keep_columns = max(self.width, ctx)
        self.history = torch.zeros(len(windows), self.keep_columns + min(steps, ctx), dtype=torch.long,
                                   device=device)
        self.history[:, :self.width] = left_pad(windows, device)[0]
        self.lengths = torch.tensor(start, device=device)  # window lengths, kept on the device
        self.steps_left = steps
        self.chunk_size = max(1, ctx)
        self._schedule = iter_slides(start, ctx, keep)
        self._device = device
        self.plan: list[SlideStep] = []
        self.step = 0  # index into self.plan, the current chunk
        self.cache: KVCache | None = None

    def _next_chunk(self) -> None:
        """Plan the next ``context_length`` steps (or fewer, the ones left); every sliding row of the
        chunk goes to the device in one tensor, and step s of the chunk reads a slice of it."""
        count = min(self.steps_left, self.chunk_size)
        self.steps_left -= count
        self.plan = list(islice(self._schedule, count))
        self.offsets = np.concatenate(([0], np.cumsum([len(s.rows) for s in self.plan], dtype=np.int64)))
        rows = np.concatenate([s.rows for s in self.plan]) if self.plan else np.zeros(0, dtype=np.int64)
        host = torch.from_numpy(rows.astype(np.int64))
        if self._device.type == "cuda":  # pinned + non_blocking: the copy does not wait for the GPU's queue
            host = host.pin_memory()
        self._host_rows = host  # alive until the next chunk, so an asynchronous copy can still read it
        self.slide_rows = host.to(self._device, non_blocking=True)
        self.step = 0

    def _append(self, next_ids: torch.Tensor) -> None:
        """Write ``next_ids`` in the next history column; when the buffer is full, first move its
        newest ``keep_columns`` columns (all any window can still need) to the front."""
        if self.end == self.history.shape[1]:
            self.history[:, :self.keep_columns] = self.history[:, self.end - self.keep_columns:self.end].clone()
            self.end = self.keep_columns
        self.history[:, self.end] = next_ids
        self.end += 1

    def prefill(self) -> torch.Tensor:
        """Run every row's whole window (left-padded), refilling the cache -> (batch, vocab)."""
        mask = right_aligned_mask(self.lengths, self.width)
        positions = (mask.long().cumsum(dim=1) - 1).clamp(min=0)  # 0 at each row's first real token
        ids = self.history[:, self.end - self.width:self.end]
        self.cache = self.model.new_kv_cache() if self.use_cache else None
        return self.model(ids, token_positions=positions, kv_cache=self.cache, padding_mask=mask)[:, -1]

    def advance(self, next_ids: torch.Tensor) -> torch.Tensor:
        """Append ``next_ids`` (batch,) to the windows; slide the rows that overflow -> (batch, vocab)."""
        if self.step == len(self.plan):
            if self.steps_left == 0:
                raise RuntimeError("RowWindows.advance called more times than the steps it was made for")
            self._next_chunk()
        plan = self.plan[self.step]
        rows = self.slide_rows[self.offsets[self.step]:self.offsets[self.step + 1]]
        self.step += 1
        self._append(next_ids)
        before = self.lengths
        self.lengths = (before + 1).index_fill(0, rows, self.keep)
        self.width = plan.width
        if self.cache is None or len(plan.rows) == len(before):  # no cache, or every row slides
            return self.prefill()
        logits = self._decode(next_ids, before, plan.kept_columns)
        if len(plan.rows):
            logits = logits.index_copy(0, rows, self._slide(rows, plan.kept_columns + 1))
        return logits

    def _decode(self, next_ids: torch.Tensor, before: torch.Tensor, kept: int) -> torch.Tensor:
        """Feed one token per row through the cache, first dropping the columns only sliding rows
        used and masking, per row, every column left of its ``before`` window keys. A sliding row's
        result here is replaced by ``_slide``."""
        cache = self.cache
        for layer in range(cache.num_layers):
            cache.keys[layer] = cache.keys[layer][..., -kept:, :]
            cache.values[layer] = cache.values[layer][..., -kept:, :]
        cache.key_padding_mask = right_aligned_mask(before, kept)
        positions = before.clamp(max=self.context_length - 1)[:, None]
        return self.model(next_ids[:, None], token_positions=positions, kv_cache=cache)[:, -1]

    def _slide(self, rows: torch.Tensor, columns: int) -> torch.Tensor:
        """Re-prefill the last ``keep`` tokens of ``rows`` alone and put their keys in the cache
        (:meth:`_splice`). Returns those rows' logits (len(rows), vocab)."""
        fresh = self.model.new_kv_cache()
        logits = self.model(self.history[rows, self.end - self.keep:self.end], kv_cache=fresh)[:, -1]
        self._splice(rows, fresh, columns)
        return logits

    def _splice(self, rows: torch.Tensor, fresh: KVCache, columns: int) -> None:
        """Put ``fresh``'s keys (of ``rows``) in the last ``keep`` columns of those rows (the cache is
        ``columns`` long; it grows on the left if ``keep`` is longer)."""
        keep, cache = self.keep, self.cache
        grow = max(0, keep - columns)
        for layer in range(cache.num_layers):
            for store, new in ((cache.keys, fresh.keys[layer]), (cache.values, fresh.values[layer])):
                old = store[layer]
                if grow:
                    old = torch.cat((old.new_zeros(*old.shape[:-2], grow, old.shape[-1]), old), dim=-2)
                old[rows, :, -keep:] = new
                store[layer] = old
        # the padding mask needs no splice: _decode rebuilds it from the window lengths every step


# -- a preallocated cache and a decoding step of fixed shapes (CUDA graphs, torch.compile) -------------


def decode_step(model: TransformerLM, cache: StaticKVCache, next_ids: torch.Tensor,
                before: torch.Tensor) -> torch.Tensor:
    """One token per row through a static cache -> next-token logits (batch, vocab).

    Row r's token ``next_ids[r]`` goes to position and column ``before[r]`` (its window length before
    it) and attends to columns 0..before[r]. The shapes never change, whatever the lengths, so the
    step compiles once (a row about to slide, before[r] = context_length, writes into the last column
    instead; its result is replaced by the re-prefill, which rewrites its columns)."""
    columns = before.clamp(max=cache.capacity - 1)
    visible = torch.arange(cache.capacity, device=columns.device) <= columns[:, None]  # (batch, capacity)
    hidden = model.run_blocks(next_ids[:, None], columns[:, None], cache.at(columns), visible)
    return model.lm_head(hidden[:, -1])


def compile_options(compile, device: torch.device) -> dict:
    """torch.compile's arguments for the decode step: a backend (a name such as "aot_eager", or a
    callable: how the tests compile it on a CPU), or for ``True`` on CUDA mode "reduce-overhead" (CUDA
    graphs: the whole step is one graph launch) and elsewhere the default backend; always one graph
    (fullgraph) of static shapes."""
    if compile is not True:
        return {"backend": compile, "fullgraph": True, "dynamic": False}
    if device.type == "cuda":
        return {"mode": "reduce-overhead", "fullgraph": True, "dynamic": False}
    return {"fullgraph": True, "dynamic": False}


class StaticDecoder:
    """A :class:`~seqlab.model.kv_cache.StaticKVCache` for ``batch_size`` rows of ``model`` and its
    decode step, compiled once when ``compile`` asks (True, or a torch.compile backend: a name or callable).

    :func:`static_decoder` keeps one per model, batch size, dtype and compile choice, so the buffers
    (whose addresses a CUDA graph holds) and the compiled step serve every later generation too.
    """

    def __init__(self, model: TransformerLM, batch_size: int, dtype: torch.dtype, compile: bool | str = False):
        cfg = model.config
        device = next(model.parameters()).device
        self.model, self.device = model, device
        self.cache = StaticKVCache(cfg.num_layers, batch_size, cfg.num_kv_heads, cfg.context_length, cfg.d_head,
                                   dtype=dtype, device=device)
        self.compiled = bool(compile)
        self.cuda_graphs = compile is True and device.type == "cuda"
        self._step = decode_step
        if compile:
            from seqlab.runtime import compile_unsupported_reason

            reason = compile_unsupported_reason(device) if compile is True else None  # a named backend may need less
            if reason:
                raise RuntimeError(f"cannot compile the decoding step: {reason}; generate without compile")
            self._step = torch.compile(decode_step, **compile_options(compile, device))

    def step(self, next_ids: torch.Tensor, before: torch.Tensor) -> torch.Tensor:
        """:func:`decode_step` on this decoder's cache (the compiled one when compiled)."""
        if self.cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()  # the last step's outputs may be overwritten now
        return self._step(self.model, self.cache, next_ids, before)


_decoders: "weakref.WeakKeyDictionary[TransformerLM, dict[tuple, StaticDecoder]]" = weakref.WeakKeyDictionary()


def static_decoder(model: TransformerLM, batch_size: int, dtype: torch.dtype,
                   compile: bool | str = False) -> StaticDecoder:
    """The model's :class:`StaticDecoder` for these settings, made on first use and kept while the model lives."""
    mine = _decoders.setdefault(model, {})
    key = (batch_size, dtype, compile)
    if key not in mine:
        mine[key] = StaticDecoder(model, batch_size, dtype, compile)
    return mine[key]


class StaticRowWindows(RowWindows):
    """:class:`RowWindows` over a preallocated cache: the same windows, slides and logits, but every
    decoding step has the same shapes (:func:`decode_step`), so it can be compiled once and, on CUDA,
    replayed as one CUDA graph per token.

    Layout: row r's window is left-aligned in the cache, its keys at columns 0..n-1 = positions
    0..n-1 (the dynamic cache right-aligns them instead); the key padding mask hides the columns to
    the right. Prefill and re-prefills (slides) run eagerly and are copied into the buffers.
    """

    def __init__(self, model: TransformerLM, windows: list[list[int]], steps: int, keep: int,
                 compile: bool | str = False):
        super().__init__(model, windows, steps, keep, use_cache=True)
        self.compile = compile
        self.decoder: StaticDecoder | None = None

    def prefill(self) -> torch.Tensor:
        """Run every row's whole window (left-aligned, padded on the right), fill the static cache -> (batch, vocab)."""
        lengths, width = self.lengths, self.width
        columns = torch.arange(width, device=self._device)
        first = self.end - lengths  # history column of each row's first window token
        ids = self.history.gather(1, (first[:, None] + columns).clamp(max=self.end - 1))
        mask = columns < lengths[:, None]
        fresh = self.model.new_kv_cache()
        hidden = self.model(ids, kv_cache=fresh, padding_mask=mask, return_hidden=True)  # positions 0..width-1
        last = hidden.gather(1, (lengths - 1)[:, None, None].expand(-1, 1, hidden.shape[-1]))[:, 0]
        if self.decoder is None:  # this generation's first prefill: the model's buffers, emptied
            self.decoder = static_decoder(self.model, len(lengths), fresh.keys[0].dtype, self.compile)
            self.cache = self.decoder.cache
            self.cache.reset()
        self.cache.load(fresh)
        return self.model.lm_head(last)

    def _decode(self, next_ids: torch.Tensor, before: torch.Tensor, kept: int) -> torch.Tensor:
        return self.decoder.step(next_ids, before)

    def _splice(self, rows: torch.Tensor, fresh: KVCache, columns: int) -> None:
        self.cache.load(fresh, rows)  # columns 0..keep-1 of those rows; the mask hides the rest
