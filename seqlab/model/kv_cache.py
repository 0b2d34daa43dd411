"""Key/value caches for incremental decoding: growing (KVCache) and preallocated (StaticKVCache)."""

from __future__ import annotations

import torch


class KVCache:
    """Per-layer keys and values (after RoPE) of every position processed so far.

    keys[layer], values[layer]: (batch, num_kv_heads, length, d_head) or None before the first call;
    with grouped-query attention that is num_heads / num_kv_heads times less memory than one entry
    per query head (num_kv_heads = num_heads without GQA).
    key_padding_mask: (batch, length) bool, True = real token, or None when every cached position
    is real. The model appends to it; sliding a full window is the caller's job (re-prefill).
    """

    def __init__(self, num_layers: int):
        if num_layers <= 0:
            raise ValueError(f"KVCache needs num_layers >= 1, got {num_layers}")
        self.num_layers = num_layers
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self.key_padding_mask: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """Number of cached positions (read from the first layer)."""
        return 0 if self.keys[0] is None else self.keys[0].shape[-2]

    @property
    def batch_size(self) -> int | None:
        return None if self.keys[0] is None else self.keys[0].shape[0]

    def layer_length(self, layer_index: int) -> int:
        keys = self.keys[layer_index]
        return 0 if keys is None else keys.shape[-2]

    def append(self, layer_index: int, keys: torch.Tensor, values: torch.Tensor):
        """Add new (batch, kv_heads, new, d_head) keys/values; return all of this layer's (.., length, ..)."""
        if not 0 <= layer_index < self.num_layers:
            raise IndexError(f"layer {layer_index} outside the cache's {self.num_layers} layers")
        old_k, old_v = self.keys[layer_index], self.values[layer_index]
        if old_k is not None:
            if old_k.shape[0] != keys.shape[0] or old_k.shape[1] != keys.shape[1]:
                raise ValueError(
                    f"cached keys have shape {tuple(old_k.shape)} but new keys have "
                    f"{tuple(keys.shape)}: batch size and heads must match"
                )
            keys = torch.cat((old_k, keys), dim=-2)
            values = torch.cat((old_v, values), dim=-2)
        self.keys[layer_index], self.values[layer_index] = keys, values
        return keys, values

    def extend_padding_mask(self, batch_size: int, new_length: int, padding_mask: torch.Tensor | None,
                            device=None) -> torch.Tensor | None:
        """Append the new tokens' padding flags; return the mask over all keys (or None if all real)."""
        past = self.length
        if padding_mask is None and self.key_padding_mask is None:
            return None
        old = self.key_padding_mask
        if old is None:
            old = torch.ones(batch_size, past, dtype=torch.bool, device=device)
        new = padding_mask
        if new is None:
            new = torch.ones(batch_size, new_length, dtype=torch.bool, device=device)
        if old.shape[0] != new.shape[0]:
            raise ValueError(
                f"padding mask batch {new.shape[0]} does not match the cached batch {old.shape[0]}"
            )
        self.key_padding_mask = torch.cat((old, new.to(torch.bool)), dim=1)
        return self.key_padding_mask

    def reset(self) -> None:
        self.keys = [None] * self.num_layers
        self.values = [None] * self.num_layers
        self.key_padding_mask = None

    def __repr__(self) -> str:
        return f"KVCache(num_layers={self.num_layers}, length={self.length})"


class StaticKVCache:
    """Keys/values in buffers allocated once: ``batch`` rows of ``capacity`` columns per layer.

    keys[layer], values[layer]: (batch, num_kv_heads, capacity, d_head), never reallocated, so a
    decoding step has the same shapes and memory addresses every time: what CUDA graphs need (the
    step is captured once and replayed) and what lets torch.compile compile it once. Row r keeps the
    keys of its window positions 0..n-1 in columns 0..n-1 (column = position); columns beyond are
    stale and must be hidden by the caller's key padding mask. With grouped-query attention the
    buffers hold num_kv_heads heads, like :class:`KVCache`.

    A decoding step writes through a view: ``cache.at(columns)`` appends each row's new key at its
    own column (``columns``: (batch,) int tensor on the device, read by the device, never the host).
    ``load(fresh, rows)`` copies a dynamic :class:`KVCache` (a prefill's) into columns 0.. of ``rows``.

    Example: 2 layers, batch 3, 4 kv heads of 16, capacity 128: 2 x 2 x 3 x 4 x 128 x 16 floats.
    """

    def __init__(self, num_layers: int, batch_size: int, num_kv_heads: int, capacity: int, d_head: int, *,
                 dtype: torch.dtype = torch.float32, device=None):
        if min(num_layers, batch_size, num_kv_heads, capacity, d_head) <= 0:
            raise ValueError(f"StaticKVCache sizes must be positive, got layers {num_layers}, batch {batch_size}, "
                             f"kv heads {num_kv_heads}, capacity {capacity}, d_head {d_head}")
        self.num_layers, self.batch_size, self.capacity = num_layers, batch_size, capacity
        shape = (batch_size, num_kv_heads, capacity, d_head)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        if self.keys[0].device.type == "cuda":
            from torch._dynamo import mark_static_address

            for tensor in (*self.keys, *self.values):  # CUDA graphs use these buffers in place, no copy
                mark_static_address(tensor)

    @property
    def dtype(self) -> torch.dtype:
        return self.keys[0].dtype

    def at(self, columns: torch.Tensor) -> "StaticStep":
        """The cache as one decoding step sees it: ``append`` writes row r's new keys from column
        ``columns[r]`` on and returns the whole buffers."""
        return StaticStep(self, columns)

    def load(self, fresh: KVCache, rows: torch.Tensor | None = None) -> None:
        """Copy ``fresh``'s keys/values (batch', kv_heads, n, d_head) into columns 0..n-1 of ``rows``
        (default: every row, batch' = batch)."""
        length = fresh.length
        if length > self.capacity:
            raise ValueError(f"{length} cached positions do not fit a static cache of {self.capacity} columns")
        for layer in range(self.num_layers):
            for store, new in ((self.keys, fresh.keys[layer]), (self.values, fresh.values[layer])):
                if rows is None:
                    store[layer][:, :, :length] = new
                else:
                    store[layer][rows, :, :length] = new

    def reset(self) -> None:
        """Zero every buffer in place (same addresses): nothing of an earlier generation stays behind."""
        for tensor in (*self.keys, *self.values):
            tensor.zero_()

    def __repr__(self) -> str:
        return (f"StaticKVCache(num_layers={self.num_layers}, batch_size={self.batch_size}, "
                f"capacity={self.capacity}, dtype={self.dtype})")


class StaticStep:
    """A :class:`StaticKVCache` during one decoding step (what attention layers call ``append`` on)."""

    def __init__(self, cache: StaticKVCache, columns: torch.Tensor):
        self.cache, self.columns = cache, columns

    def layer_length(self, layer_index: int) -> int:
        """Every column is there (the buffers' width); which are real is the key padding mask's business."""
        return self.cache.capacity

    def append(self, layer_index: int, keys: torch.Tensor, values: torch.Tensor):
        """Write (batch, kv_heads, new, d_head) keys/values at columns ``columns[r]`` + 0..new-1 of row r;
        return the layer's whole buffers (batch, kv_heads, capacity, d_head)."""
        if not 0 <= layer_index < self.cache.num_layers:
            raise IndexError(f"layer {layer_index} outside the cache's {self.cache.num_layers} layers")
        stored_k, stored_v = self.cache.keys[layer_index], self.cache.values[layer_index]
        if keys.shape[0] != stored_k.shape[0] or keys.shape[1] != stored_k.shape[1]:
            raise ValueError(f"the static cache holds {tuple(stored_k.shape)} but the new keys are "
                             f"{tuple(keys.shape)}: batch size and heads must match")
        new = keys.shape[-2]
        index = (self.columns[:, None] + torch.arange(new, device=self.columns.device))  # (batch, new)
        index = index[:, None, :, None].expand(keys.shape)
        stored_k.scatter_(-2, index, keys.to(stored_k.dtype))
        stored_v.scatter_(-2, index, values.to(stored_v.dtype))
        return stored_k, stored_v
