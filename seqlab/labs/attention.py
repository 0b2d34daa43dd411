"""Scaled dot-product attention, masks, multi-head and cross-attention, with a hand-written backward.

Row-vector convention: queries Q (n, d), keys K (m, d), values V (m, dv) or (m,) for scalar values.

    scores = Q K^T / sqrt(d)    (n, m)
    weights = softmax over each row, masked scores set to -inf first (mask True = may attend)
    output = weights V          (n, dv)

A row whose every key is masked has no distribution to normalize: it returns zero weights and a zero
output and is listed in `fully_masked_rows`, never NaN.
"""

from __future__ import annotations

import numpy as np


def causal_mask(n: int) -> np.ndarray:
    """(n, n) bool, True where query i may attend key j, i.e. j <= i. 3 -> 6 visible entries."""
    if n < 1:
        raise ValueError(f"causal_mask: n must be >= 1, got {n}")
    return np.tril(np.ones((n, n), dtype=bool))


def padding_mask(valid, length: int | None = None, num_queries: int | None = None) -> np.ndarray:
    """Key mask that hides padding.

    valid: an int (the number of real tokens, then `length` is the padded length) or a sequence of
    bools (True = real token). Returns (m,) bool, or (num_queries, m) when num_queries is given.
    """
    if np.ndim(valid) == 0:
        if length is None:
            raise ValueError("padding_mask: a valid length needs `length`, the padded sequence length")
        if not 0 <= int(valid) <= length:
            raise ValueError(f"padding_mask: valid length {valid} outside 0..{length}")
        keys = np.arange(length) < int(valid)
    else:
        keys = np.asarray(valid, dtype=bool)
        if keys.ndim != 1:
            raise ValueError(f"padding_mask: valid flags must be 1-D, got shape {keys.shape}")
    return keys if num_queries is None else np.broadcast_to(keys, (num_queries, keys.size)).copy()


def masked_softmax(scores: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise stable softmax of scores (n, m); masked entries -> -inf -> weight exactly 0.

    Returns (weights (n, m), fully_masked (n,) bool). Fully masked rows get all-zero weights.
    """
    scores = np.asarray(scores, dtype=np.float64)
    visible = np.ones(scores.shape, dtype=bool) if mask is None else np.broadcast_to(mask, scores.shape)
    masked_scores = np.where(visible, scores, -np.inf)
    fully_masked = ~visible.any(axis=-1)
    row_max = masked_scores.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)     # fully masked rows: avoid inf - inf
    e = np.exp(masked_scores - row_max)                         # exp(-inf) = 0 exactly
    totals = e.sum(axis=-1, keepdims=True)
    weights = np.divide(e, totals, out=np.zeros_like(e), where=totals > 0)
    return weights, fully_masked


def _as_matrix(name, x, width=None):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[None, :] if width is None else x[:, None]
    if x.ndim != 2:
        raise ValueError(f"attention: {name} must be 1-D or 2-D, got shape {x.shape}")
    return x


def attention(q, keys, values, mask=None) -> dict:
    """Scaled dot-product attention.

    q (d,) or (n, d); keys (m, d); values (m,) or (m, dv); mask (m,) or (n, m) bool, True = may attend.
    Returns scores, weights ((m,) / (n, m)), output (scalar / (dv,) for a single query; (n,) / (n, dv)
    otherwise) and fully_masked_rows (list of query row indices with nothing to attend to).
    q=[1,0], keys=[[1,0],[0,1]], values=[2,10] -> scores [0.7071, 0], weights [0.6698, 0.3302], output 4.6419.
    """
    single_query = np.ndim(q) == 1
    Q, K = _as_matrix("q", q), _as_matrix("keys", keys)
    scalar_values = np.ndim(values) == 1
    V = _as_matrix("values", values, width=1)
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"attention: query width {Q.shape[1]} != key width {K.shape[1]}")
    if V.shape[0] != K.shape[0]:
        raise ValueError(f"attention: {K.shape[0]} keys but {V.shape[0]} values")
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape not in ((K.shape[0],), (Q.shape[0], K.shape[0])):
            raise ValueError(f"attention: mask shape {mask.shape} must be ({K.shape[0]},) or "
                             f"({Q.shape[0]}, {K.shape[0]})")
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    weights, fully_masked = masked_softmax(scores, mask)
    output = weights @ V
    if scalar_values:
        output = output[:, 0]
    if single_query:
        scores, weights, output = scores[0], weights[0], output[0]
        output = float(output) if np.ndim(output) == 0 else output
    return {"scores": scores, "weights": weights, "output": output,
            "fully_masked_rows": [int(i) for i in np.flatnonzero(fully_masked)]}


def attention_backward(q, keys, values, d_output, mask=None) -> dict[str, np.ndarray]:
    """Gradients of sum(d_output * output) for 2-D inputs: q (n, d), keys (m, d), values (m, dv),
    d_output (n, dv). Returns {"q": (n, d), "keys": (m, d), "values": (m, dv)}.

    With A the weights: softmax backward per row, dS = A * (dA - sum_j dA_j A_j). Masked entries have
    A = 0, so they get no gradient; fully masked rows get none at all.
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (q, keys, values))
    dO = np.asarray(d_output, dtype=np.float64)
    scale = 1.0 / np.sqrt(Q.shape[1])
    A, _ = masked_softmax(Q @ K.T * scale, mask)
    dA = dO @ V.T
    dS = A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
    return {"q": dS @ K * scale, "keys": dS.T @ Q * scale, "values": A.T @ dO}


def init_multihead_params(d_model: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Wq, Wk, Wv, Wo, each (d_model, d_model), applied as x @ W."""
    std = 1.0 / np.sqrt(d_model)
    return {name: rng.normal(0.0, std, (d_model, d_model)) for name in ("Wq", "Wk", "Wv", "Wo")}


def _split_heads(x: np.ndarray, num_heads: int) -> list[np.ndarray]:
    width = x.shape[1] // num_heads
    return [x[:, h * width:(h + 1) * width] for h in range(num_heads)]


def multihead_attention(x_q, x_kv, params, num_heads: int, mask=None) -> dict:
    """Multi-head attention: x_q (n, d_model) queries, x_kv (m, d_model) keys/values.

    Q = x_q Wq, K = x_kv Wk, V = x_kv Wv (each split into num_heads slices of width d_model/num_heads);
    each head: attention -> (n, head_width); concat (n, d_model); output = concat Wo (n, d_model).
    Returns {"q", "k", "v", "heads": [per-head dict with q, k, v, scores, weights, output], "concat",
    "output"}.
    """
    x_q, x_kv = np.asarray(x_q, dtype=np.float64), np.asarray(x_kv, dtype=np.float64)
    d_model = params["Wq"].shape[0]
    if d_model % num_heads:
        raise ValueError(f"multihead_attention: d_model {d_model} is not divisible by num_heads {num_heads}")
    for name, x in (("x_q", x_q), ("x_kv", x_kv)):
        if x.ndim != 2 or x.shape[1] != d_model:
            raise ValueError(f"multihead_attention: {name} must have shape (rows, {d_model}), got {x.shape}")
    Q, K, V = x_q @ params["Wq"], x_kv @ params["Wk"], x_kv @ params["Wv"]
    heads = []
    for q_h, k_h, v_h in zip(_split_heads(Q, num_heads), _split_heads(K, num_heads), _split_heads(V, num_heads)):
        head = attention(q_h, k_h, v_h, mask)
        heads.append({"q": q_h, "k": k_h, "v": v_h, **head})
    concat = np.concatenate([h["output"] for h in heads], axis=1)
    return {"q": Q, "k": K, "v": V, "heads": heads, "concat": concat, "output": concat @ params["Wo"]}


def multihead_attention_backward(x_q, x_kv, params, num_heads: int, d_output, mask=None) -> dict:
    """Gradients of sum(d_output * output): Wq, Wk, Wv, Wo, x_q (n, d_model), x_kv (m, d_model).

    For self-attention (x_q is x_kv) the input's gradient is x_q + x_kv.
    """
    fwd = multihead_attention(x_q, x_kv, params, num_heads, mask)
    x_q, x_kv = np.asarray(x_q, dtype=np.float64), np.asarray(x_kv, dtype=np.float64)
    d_output = np.asarray(d_output, dtype=np.float64)
    d_concat = d_output @ params["Wo"].T
    dQ, dK, dV = [], [], []
    for head, d_head in zip(fwd["heads"], _split_heads(d_concat, num_heads)):
        g = attention_backward(head["q"], head["k"], head["v"], d_head, mask)
        dQ.append(g["q"])
        dK.append(g["keys"])
        dV.append(g["values"])
    dQ, dK, dV = (np.concatenate(parts, axis=1) for parts in (dQ, dK, dV))
    return {
        "Wq": x_q.T @ dQ, "Wk": x_kv.T @ dK, "Wv": x_kv.T @ dV, "Wo": fwd["concat"].T @ d_output,
        "x_q": dQ @ params["Wq"].T, "x_kv": dK @ params["Wk"].T + dV @ params["Wv"].T,
    }


def cross_attention(x_target, x_source, params, num_heads: int = 1, source_mask=None) -> dict:
    """Target positions (n_t, d_model) attend over source positions (n_s, d_model): every head's
    weight map is rectangular (n_t, n_s). source_mask: (n_s,) bool, False = padding."""
    return multihead_attention(x_target, x_source, params, num_heads, source_mask)


def multihead_shapes(n: int, d_model: int, num_heads: int) -> dict[str, list[int]]:
    """Shapes, as [rows, cols], of every intermediate of self-attention over n tokens, measured by
    running `multihead_attention` on random inputs. n=3, d_model=4, 2 heads -> q [3, 2],
    scores [3, 3], head_output [3, 2], concat [3, 4]."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d_model))
    out = multihead_attention(x, x, init_multihead_params(d_model, rng), num_heads)
    head = out["heads"][0]
    shape = lambda a: [int(s) for s in np.shape(a)]
    return {"x": shape(x), "q": shape(head["q"]), "k": shape(head["k"]), "v": shape(head["v"]),
            "scores": shape(head["scores"]), "weights": shape(head["weights"]),
            "head_output": shape(head["output"]), "concat": shape(out["concat"]),
            "output": shape(out["output"])}
