"""Key/value cache for incremental decoding."""

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
