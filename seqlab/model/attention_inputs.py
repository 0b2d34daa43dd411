"""What every attention backend takes: the shape/dtype contract of Q, K, V, mask and the causal mask.

Shapes: Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v); the leading dims broadcast. A mask is
bool, True = the query may attend to the key, and broadcasts against (..., n, m).
"""

from __future__ import annotations

import torch


def check_attention_inputs(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None) -> None:
    """Raise a ValueError/TypeError naming the shapes when Q, K, V and mask do not fit together."""
    d_k = Q.shape[-1]
    if K.shape[-1] != d_k:
        raise ValueError(f"Q has d_k={d_k} but K has {K.shape[-1]} (shapes {tuple(Q.shape)}, {tuple(K.shape)})")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K has {K.shape[-2]} keys but V has {V.shape[-2]} values "
                         f"(shapes {tuple(K.shape)}, {tuple(V.shape)})")
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError(f"attention mask must be bool (True = may attend), got {mask.dtype}; "
                        f"convert it with mask.bool()")


def causal_mask(num_queries: int, num_keys: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(num_queries, num_keys) bool: query i, the last num_queries of num_keys positions, sees keys <= it.

    Example: causal_mask(2, 4) (two new queries after two cached keys) is
        [[True, True, True, False],
         [True, True, True, True ]]
    """
    offset = num_keys - num_queries  # query i sits at absolute position i + offset
    query_position = torch.arange(num_queries, device=device)[:, None] + offset
    key_position = torch.arange(num_keys, device=device)[None, :]
    return key_position <= query_position
